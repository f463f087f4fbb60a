/**
 * A transaction-mode pooler (PgBouncer's `pool_mode = transaction`, a managed service's pooler port) hands a client's
 * server connection to other clients between transactions. Named prepared statements, session settings and LISTEN do
 * not survive that, so DATABASE_POOLER=transaction turns them off; this finds a pooler running without the setting.
 */
import { OLDEST_POSTGRES } from './postgres-version.js';

/** The one line a process stops with when DATABASE_URL is a transaction pooler and DATABASE_POOLER is not set. */
export class PoolerMismatch extends Error {
  readonly code = 'quoting.pooler';
  constructor(evidence: string) {
    super(
      `DATABASE_URL goes through a transaction-mode connection pooler (${evidence}): set DATABASE_POOLER=transaction ` +
        '(and DATABASE_LISTEN_URL to a direct connection for LISTEN), or point DATABASE_URL at PostgreSQL or a session-mode pool; see "Scaling" in README.md',
    );
  }
}

export function isPoolerMismatch(err: unknown): err is PoolerMismatch {
  return err instanceof PoolerMismatch;
}

const mismatchHearers = new Set<(err: PoolerMismatch) => void>();

/** `quoting serve` stops on the first PoolerMismatch a request meets (the request itself is answered 503). */
export function onPoolerMismatch(hearer: (err: PoolerMismatch) => void): () => void {
  mismatchHearers.add(hearer);
  return () => void mismatchHearers.delete(hearer);
}

export function reportPoolerMismatch(err: PoolerMismatch): void {
  for (const hearer of mismatchHearers) hearer(err);
}

type Client = import('pg').Client;

/**
 * How `connectionString` pools, seen from two connections of its own, or null when it gives each client a session
 * of its own (PostgreSQL itself, a session-mode pool). A pooler that answers `SHOW pool_mode` says so; PgBouncer passes
 * the statement to PostgreSQL, so the backends are watched: client A holds a transaction while B runs a statement,
 * then B runs another once A has committed. On PostgreSQL each client keeps its backend; a transaction pooler gives
 * B the backend A released (its idle connections are reused most recent first), or some other one.
 */
export async function detectTransactionPooler(connectionString: string): Promise<string | null> {
  const { default: pg } = await import('pg');
  const open = async (): Promise<Client> => {
    const client = new pg.Client({ connectionString, application_name: 'quoting-pooler-check', connectionTimeoutMillis: 10_000 });
    client.on('error', () => {}); // a connection lost here fails the query that follows, which is enough
    await client.connect();
    return client;
  };
  const a = await open();
  let b: Client | undefined;
  try {
    // Too old a PostgreSQL is refused by the version check that follows (postgres-version.ts) before anything else is sent to it.
    const num = await a.query(`select current_setting('server_version_num')::int as num`).then((result) => Number(result.rows[0]?.num), () => null);
    if (num !== null && num < OLDEST_POSTGRES.num) return null;
    const mode = await a.query('show pool_mode').then(
      (result) => String(Object.values(result.rows[0] ?? {})[0] ?? ''),
      () => null, // PostgreSQL: no such setting
    );
    if (mode === 'transaction' || mode === 'statement') return `it answers SHOW pool_mode with ${mode}`;
    if (mode !== null) return null;
    b = await open();
    const pid = async (client: Client) => Number((await client.query('select pg_backend_pid() as pid')).rows[0].pid);
    for (let round = 0; round < 3; round++) {
      await a.query('begin');
      const held = await pid(a);
      const before = await pid(b);
      await a.query('commit');
      const after = await pid(b);
      const again = await pid(a);
      if (before !== after || held !== again) return 'one connection was served by several PostgreSQL backends';
    }
    return null;
  } finally {
    await Promise.all([a.end().catch(() => {}), b?.end().catch(() => {})]);
  }
}
