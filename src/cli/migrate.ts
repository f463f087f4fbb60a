import { migrateLatest, migrationStatus } from '../db/migrations.js';
import { commandConfig, withDatabase } from './context.js';

export async function migrate(opts: Record<string, unknown>): Promise<void> {
  const config = commandConfig(opts);
  await withDatabase(config, async ({ knex }) => {
    if (opts.status) {
      const { applied, pending } = await migrationStatus(knex);
      console.log(`Applied (${applied.length}):`);
      for (const name of applied) console.log(`  ${name}`);
      console.log(`Pending (${pending.length}):`);
      for (const name of pending) console.log(`  ${name}`);
      return;
    }
    const applied = await migrateLatest(knex);
    if (applied.length === 0) console.log('Nothing to migrate: the database is up to date.');
    else for (const name of applied) console.log(`Applied ${name}`);
  });
}
