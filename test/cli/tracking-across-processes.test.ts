import crypto from 'node:crypto';
import test, { type ExecutionContext } from 'ava';
import { openDatabase } from '../../src/db/database.js';
import { Client } from '../helpers/client.js';
import { migrateLatest } from '../../src/db/migrations.js';
import { PATIENCE_MS } from '../helpers/patience.js';
import { freePort, migratedBackend, newDataDir, postgresTest, runCli, startServe, usingPostgres } from '../helpers/cli.js';
import { embeddedTest } from '../helpers/skip.js';

/** A workspace written straight into the database (no server runs yet); returns its id and public key. */
async function seedWorkspace(backend: Record<string, string>): Promise<{ id: number; slug: string; publicKey: string }> {
  const database = await openDatabase({ databaseUrl: backend.DATABASE_URL, dataDir: backend.DATA_DIR ?? '' });
  try {
    const publicKey = `pk_live_${crypto.randomBytes(24).toString('base64url')}`;
    const slug = `cli-${crypto.randomBytes(4).toString('hex')}`;
    const [row] = await database.knex('workspaces')
      .insert({ name: 'Cli Shop', slug, public_key: publicKey, secret_key_hash: crypto.randomBytes(32).toString('hex') })
      .returning('id');
    return { id: row.id, slug, publicKey };
  } finally {
    await database.close();
  }
}

async function withBackend<T>(backend: Record<string, string>, fn: (knex: import('knex').Knex) => Promise<T>): Promise<T> {
  const database = await openDatabase({ databaseUrl: backend.DATABASE_URL, dataDir: backend.DATA_DIR ?? '' });
  try {
    return await fn(database.knex);
  } finally {
    await database.close();
  }
}

/** One old and one recent event of the workspace. */
async function seedEvents(backend: Record<string, string>, workspaceId: number): Promise<void> {
  await withBackend(backend, (knex) =>
    knex('track_events').insert([
      { workspace_id: workspaceId, visitor_id: 'old', type: 'page_view', occurred_at: knex.raw("now() - interval '31 days'") },
      { workspace_id: workspaceId, visitor_id: 'recent', type: 'page_view', occurred_at: knex.raw("now() - interval '29 days'") },
    ]),
  );
}

/** A migrated database for spawned commands: scratch PostgreSQL, or an embedded data directory migrated in-process (faster than a CLI run). */
async function backendFor(t: ExecutionContext): Promise<Record<string, string>> {
  if (usingPostgres) return migratedBackend(t);
  const backend = { DATA_DIR: newDataDir(t) };
  await withBackend(backend, async (knex) => void (await migrateLatest(knex)));
  return backend;
}

const remaining = (backend: Record<string, string>, workspaceId: number) =>
  withBackend(backend, async (knex) => (await knex('track_events').where({ workspace_id: workspaceId }).orderBy('visitor_id').pluck('visitor_id')) as string[]);

postgresTest('two server processes on one database share one rate cap', async (t) => {
  const backend = await migratedBackend(t);
  const { publicKey } = await seedWorkspace(backend);
  const env = { ...backend, TRACK_RATE_PER_MINUTE: '20' };
  const servers = await Promise.all([0, 1].map(async () => startServe(t, ['--port', String(await freePort())], { env })));
  // Stay inside one one-minute window for the burst.
  const second = new Date().getUTCSeconds();
  if (second > 45) await new Promise((resolve) => setTimeout(resolve, (61 - second) * 1000));
  const send = (url: string, i: number) =>
    new Client(url).post('/api/v1/track/event', { visitor_id: `burst-${i}`, type: 'page_view' }, { headers: { authorization: `Public ${publicKey}` } });
  const results = await Promise.all(Array.from({ length: 30 }, (_, i) => send(servers[i % 2].url, i)));
  const statuses = results.map((r) => r.status);
  t.is(statuses.filter((s) => s === 204).length, 20, statuses.join(','));
  t.is(statuses.filter((s) => s === 429).length, 10, statuses.join(','));
  t.true(results.filter((r) => r.status === 204).some((_, i) => i % 2 === 0) && results.some((r, i) => r.status === 204 && i % 2 === 1), 'both servers accepted some');
  for (const r of results.filter((r) => r.status === 429)) t.deepEqual(r.body, { error: 'Too many events.' });
});

postgresTest('a public key rotated from another process stops working in every server process, though each had it cached', async (t) => {
  const backend = await migratedBackend(t);
  const { slug, publicKey } = await seedWorkspace(backend);
  // An hour of cache: only the notification of the change can evict the key within this test.
  const env = { ...backend, SESSION_CACHE_SECONDS: '3600' };
  const servers = await Promise.all([0, 1].map(async () => startServe(t, ['--port', String(await freePort())], { env })));
  const send = (url: string, key: string) =>
    new Client(url).post('/api/v1/track/event', { visitor_id: 'rotating', type: 'page_view' }, { headers: { authorization: `Public ${key}` } });
  for (const server of servers) {
    t.is((await send(server.url, publicKey)).status, 204);
    t.is((await send(server.url, publicKey)).status, 204, 'served again, now from the cache');
  }
  const rotated = await runCli(['rotate-keys', '--workspace', slug], { env: backend });
  t.is(rotated.code, 0, rotated.stderr);
  const newKey = /^Public key: (\S+)/m.exec(rotated.stdout)![1];
  for (const server of servers) {
    // The notification arrives after the rotation commits: asked until it has (never for the cache's hour).
    const deadline = Date.now() + PATIENCE_MS;
    let status = (await send(server.url, publicKey)).status;
    while (status === 204 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      status = (await send(server.url, publicKey)).status;
    }
    t.is(status, 401, 'the old key is refused');
    t.is((await send(server.url, newKey)).status, 204, 'the new key works');
  }
});

test('`quoting worker` purges events older than TRACK_RETENTION_DAYS', async (t) => {
  const backend = await backendFor(t);
  const { id } = await seedWorkspace(backend);
  await seedEvents(backend, id);
  const result = await runCli(['worker'], { env: { ...backend, TRACK_RETENTION_DAYS: '30' } });
  t.is(result.code, 0, result.stderr);
  t.deepEqual(await remaining(backend, id), ['recent']);
});

embeddedTest('`quoting serve` on the embedded database purges expired events itself', async (t) => {
  const backend = await backendFor(t);
  const { id } = await seedWorkspace(backend);
  await seedEvents(backend, id);
  const server = await startServe(t, ['--port', String(await freePort())], { env: { ...backend, TRACK_RETENTION_DAYS: '30' } });
  // The first purge runs at start, and stopping waits for a purge under way.
  t.is((await new Client(server.url).get('/tag/nobody.js')).status, 404);
  const stopped = await server.stop('SIGTERM');
  t.is(stopped.code, 0);
  t.deepEqual(await remaining(backend, id), ['recent']);
});
