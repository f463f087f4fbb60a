import fs from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import path from 'node:path';
import type { Knex } from 'knex';
import { assertPostgresVersion } from './postgres-version.js';

const migrationsDir = fileURLToPath(new URL('../../migrations/', import.meta.url));

interface MigrationFile {
  name: string;
  file: string;
}

/** Migrations are the compiled files of migrations/, tracked by file name (without extension). */
const source: Knex.MigrationSource<MigrationFile> = {
  async getMigrations() {
    return fs
      .readdirSync(migrationsDir)
      .filter((file) => file.endsWith('.js'))
      .sort()
      .map((file) => ({ name: file.replace(/\.js$/, ''), file: path.join(migrationsDir, file) }));
  },
  getMigrationName: (migration) => migration.name,
  getMigration: (migration) => import(pathToFileURL(migration.file).href),
};

/** knex's migrator over migrations/ (also for a test that rolls the latest back). */
export const migratorConfig: Knex.MigratorConfig = { migrationSource: source, tableName: 'knex_migrations' };

export interface MigrationStatus {
  applied: string[];
  pending: string[];
}

/** Every migration of this version, in order (what a database without any has pending). */
export async function allMigrations(): Promise<string[]> {
  return (await source.getMigrations([])).map((m) => m.name);
}

export async function migrationStatus(knex: Knex): Promise<MigrationStatus> {
  const [completed, pending] = (await knex.migrate.list(migratorConfig)) as [{ name: string }[], MigrationFile[]];
  return { applied: completed.map((m) => m.name), pending: pending.map((m) => m.name) };
}

/** Applies pending migrations and returns their names (empty when none were pending); first refuses a PostgreSQL too old for them. */
export async function migrateLatest(knex: Knex): Promise<string[]> {
  await assertPostgresVersion(knex);
  const [, applied] = (await knex.migrate.latest(migratorConfig)) as [number, string[]];
  return applied;
}
