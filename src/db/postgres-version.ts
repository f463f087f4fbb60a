import type { Knex } from 'knex';

/** PostgreSQL's oldest release Quoting runs on: its migrations use `on delete set null (column)` (15). */
export const OLDEST_POSTGRES = { num: 150000, name: '15' };

/** What to do about a server that is too old (Ubuntu 22.04 ships 14). */
export const POSTGRES_UPGRADE_FIX =
  `install PostgreSQL ${OLDEST_POSTGRES.name} or later (Debian 12 ships 15, Ubuntu 24.04 ships 16; on Ubuntu 22.04 install postgresql-16 ` +
  "from the PostgreSQL project's apt repository), point DATABASE_URL at it, then run 'quoting migrate'";

export interface ServerVersion {
  /** `server_version_num`, e.g. 150020. */
  num: number;
  /** e.g. "PostgreSQL 15.20". */
  name: string;
}

export async function serverVersion(knex: Knex): Promise<ServerVersion> {
  const { rows } = await knex.raw(`select version() as version, current_setting('server_version_num')::int as num`);
  return { num: rows[0].num, name: String(rows[0].version).split(' ').slice(0, 2).join(' ') };
}

/** What is wrong with a PostgreSQL of this `server_version_num`, or null when it will do. */
export function postgresTooOld(versionNum: number, version: string): string | null {
  return versionNum < OLDEST_POSTGRES.num ? `${version} is older than PostgreSQL ${OLDEST_POSTGRES.name}, which Quoting needs` : null;
}

export class PostgresTooOld extends Error {}

/** Run before anything else touches the schema: a migration that fails half-way on an old server helps no one. */
export async function assertPostgresVersion(knex: Knex): Promise<void> {
  const { num, name } = await serverVersion(knex);
  const problem = postgresTooOld(num, name);
  if (problem) throw new PostgresTooOld(`${problem}: ${POSTGRES_UPGRADE_FIX}`);
}
