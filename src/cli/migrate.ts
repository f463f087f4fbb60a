import { embeddedDatabaseExists } from '../db/database.js';
import { allMigrations, migrateLatest, migrationStatus, type MigrationStatus } from '../db/migrations.js';
import { assertPostgresVersion } from '../db/postgres-version.js';
import { commandConfig, withDatabase } from './context.js';
import { say, type CommandIo } from './io.js';

export async function migrate(opts: Record<string, unknown>, io: CommandIo): Promise<void> {
  const config = commandConfig(opts);
  if (opts.status) {
    // Where there is no embedded database yet, everything is pending: said without creating one.
    const status =
      !config.DATABASE_URL && !embeddedDatabaseExists(config.DATA_DIR)
        ? { applied: [], pending: await allMigrations() }
        : await withDatabase(config, async ({ knex }) => {
            await assertPostgresVersion(knex);
            return migrationStatus(knex);
          });
    return printStatus(status, io);
  }
  // Applying is what creates the embedded database where there is none (and checks PostgreSQL's version first).
  await withDatabase(
    config,
    async ({ knex }) => {
      const applied = await migrateLatest(knex);
      if (applied.length === 0) say(io.stdout, 'Nothing to migrate: the database is up to date.');
      else for (const name of applied) say(io.stdout, `Applied ${name}`);
    },
    { create: true },
  );
}

function printStatus({ applied, pending }: MigrationStatus, io: CommandIo): void {
  say(io.stdout, `Applied (${applied.length}):`);
  for (const name of applied) say(io.stdout, `  ${name}`);
  say(io.stdout, `Pending (${pending.length}):`);
  for (const name of pending) say(io.stdout, `  ${name}`);
}
