import { POSTGRES_UPGRADE_FIX, postgresTooOld, serverVersion } from '../../db/postgres-version.js';
import { fail, ok, warn, type Check } from './check.js';

export { OLDEST_POSTGRES, postgresTooOld } from '../../db/postgres-version.js';

const MINUTE = 60_000;

export function ago(ms: number): string {
  if (ms < 2 * MINUTE) return `${Math.round(ms / 1000)} s`;
  if (ms < 120 * MINUTE) return `${Math.round(ms / MINUTE)} min`;
  if (ms < 48 * 60 * MINUTE) return `${Math.round(ms / (60 * MINUTE))} h`;
  return `${Math.round(ms / (24 * 60 * MINUTE))} days`;
}

/**
 * Where the data is, without credentials. A host that is a directory (`%2Fvar%2Frun%2Fpostgresql`, or `?host=` with an
 * empty host) is where PostgreSQL's Unix socket is: node-postgres and libpq (pg_dump) read the URL so.
 */
export function describeDatabase(databaseUrl: string | undefined, dataDir: string): string {
  if (!databaseUrl) return `embedded PGlite in ${dataDir}`;
  const url = new URL(databaseUrl);
  const host = decoded(url.hostname) || url.searchParams.get('host') || 'localhost';
  if (host.startsWith('/')) return `PostgreSQL through the socket in ${host}, database ${decoded(url.pathname.slice(1))}`;
  return `PostgreSQL at ${host}:${url.port || 5432}${url.pathname}`;
}

/** Percent-decoded, or as it is when it does not decode (the doctor describes any URL the configuration accepted). */
function decoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

export const databaseReachable: Check = {
  id: 'database',
  title: 'Database',
  reads: ['DATABASE_URL', 'DATA_DIR'],
  async run(ctx) {
    const access = await ctx.database();
    if (!access.ok) {
      const fix = access.fix ?? fixFor(ctx.config.DATABASE_URL, ctx.settingsIn);
      return access.status === 'fail' ? fail(access.reason, fix) : warn(access.reason, fix);
    }
    const { database } = access;
    const { num, name: version } = await serverVersion(database.knex);
    const problem = database.kind === 'postgres' && postgresTooOld(num, version);
    if (problem) return fail(problem, POSTGRES_UPGRADE_FIX);
    return ok(`${describeDatabase(ctx.config.DATABASE_URL, ctx.config.DATA_DIR)} answers (${database.kind === 'pglite' ? `PGlite, ${version}` : version})`);
  },
};

function fixFor(databaseUrl: string | undefined, settingsIn: string): string {
  if (!databaseUrl) return `check that DATA_DIR is the data directory and readable by this user, ${settingsIn}`;
  return `check DATABASE_URL (host, port, user, password, database) ${settingsIn}, and that PostgreSQL runs (systemctl status postgresql)`;
}

export const pendingMigrations: Check = {
  id: 'migrations',
  title: 'Migrations',
  reads: ['DATABASE_URL', 'DATA_DIR'],
  async run(ctx) {
    const access = await ctx.database();
    if (!access.ok) return warn('not checked: the database could not be opened', 'see the Database check');
    const { pending } = access;
    if (pending.length === 0) return ok('the database is up to date');
    const text = `${pending.length} pending (${pending.join(', ')})`;
    if (access.database.kind === 'postgres') return fail(`${text}: quoting serve refuses to start`, "run 'quoting migrate'");
    return warn(`${text}: quoting serve applies them when it starts`, "run 'quoting migrate', or restart quoting serve");
  },
};

export const webhookBacklog: Check = {
  id: 'webhook_backlog',
  title: 'Webhook backlog',
  reads: ['DATABASE_URL', 'DATA_DIR', 'WEBHOOKS_ENABLED'],
  async run(ctx) {
    const access = await ctx.database();
    if (!access.ok) return warn('not checked: the database could not be opened', 'see the Database check');
    if (access.pending.length) return warn('not checked: migrations are pending', "run 'quoting migrate'");
    const { rows } = await access.database.knex.raw(
      `/* all workspaces: the queue's health, which spans them */ select count(*)::int as due, extract(epoch from now() - min(next_attempt_at))::float8 as age
       from webhook_deliveries where status in ('pending', 'failed') and next_attempt_at <= now()`,
    );
    const due = rows[0].due as number;
    if (due === 0) return ok('no delivery is waiting');
    const age = Number(rows[0].age) * 1000;
    const text = `${due} ${due === 1 ? 'delivery is' : 'deliveries are'} due, the oldest for ${ago(age)}`;
    const fix =
      access.database.kind === 'postgres'
        ? 'the worker is not running: systemctl status quoting-worker.timer (or the cron entry), and journalctl -u quoting-worker'
        : 'quoting serve delivers them: is it running? systemctl status quoting';
    if (age > 15 * MINUTE) return fail(text, fix);
    if (age > 2 * MINUTE) return warn(text, fix);
    return ok(text);
  },
};

export const workerRuns: Check = {
  id: 'worker',
  title: 'Worker',
  reads: ['DATABASE_URL', 'DATA_DIR', 'WEBHOOKS_ENABLED'],
  async run(ctx) {
    if (!ctx.config.WEBHOOKS_ENABLED) return ok('webhooks are off (WEBHOOKS_ENABLED=0)');
    const access = await ctx.database();
    if (!access.ok) return warn('not checked: the database could not be opened', 'see the Database check');
    if (access.pending.length) return warn('not checked: migrations are pending', "run 'quoting migrate'");
    const run = await access.database.knex('worker_runs').first('finished_at', 'mode', 'host', 'pid');
    const kind = access.database.kind;
    const fix =
      kind === 'postgres'
        ? "run 'quoting worker' every minute: systemctl enable --now quoting-worker.timer, or the cron line in the README"
        : 'quoting serve delivers webhooks itself on the embedded database: keep it running';
    if (!run) {
      if (kind === 'pglite') return ok('quoting serve delivers webhooks in-process (no separate worker run recorded)');
      return warn('no run of quoting worker recorded yet', fix);
    }
    const age = Date.now() - new Date(run.finished_at).getTime();
    const text = `last run ${ago(age)} ago (${run.mode}, ${run.host} pid ${run.pid})`;
    if (kind === 'postgres' && age > 5 * MINUTE) return warn(text, fix);
    return ok(text);
  },
};
