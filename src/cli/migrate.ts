import { migrateLatest, migrationStatus } from '../db/migrations.js';
import { assertPostgresVersion } from '../db/postgres-version.js';
import { commandConfig, withDatabase } from './context.js';
import { say, type CommandIo } from './io.js';

export async function migrate(opts: Record<string, unknown>, io: CommandIo): Promise<void> {
  const config = commandConfig(opts);
  // Only applying may create the embedded database; `--status` reports on an existing one.
  await withDatabase(config, async ({ knex }) => {
    if (opts.status) {
      await assertPostgresVersion(knex);
      const { applied, pending } = await migrationStatus(knex);
      say(io.stdout, `Applied (${applied.length}):`);
      for (const name of applied) say(io.stdout, `  ${name}`);
      say(io.stdout, `Pending (${pending.length}):`);
      for (const name of pending) say(io.stdout, `  ${name}`);
      return;
    }
    const applied = await migrateLatest(knex);
    if (applied.length === 0) say(io.stdout, 'Nothing to migrate: the database is up to date.');
    else for (const name of applied) say(io.stdout, `Applied ${name}`);
  }, { create: !opts.status });
}
