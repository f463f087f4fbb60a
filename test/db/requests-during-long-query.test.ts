import test from 'ava';
import { useApp } from '../helpers/fixture.js';
import { usingPostgres } from '../helpers/database.js';

const { app } = useApp(test);

/**
 * The embedded database runs in its own thread (src/db/pglite-thread.ts): while one query runs, the server
 * still takes requests. Were PGlite on the server's thread, the request below would be read only once the
 * query had returned. The query counts a few million rows (seconds on PGlite, longer on a loaded
 * machine); the request needs no database and takes a few milliseconds.
 */
test('a request that needs no database is answered while a long query runs', async (t) => {
  const order: string[] = [];
  const rows = usingPostgres ? 50_000_000 : 2_000_000;
  const query = app.db.raw('select count(*)::int as n from generate_series(1, ?::int)', [rows]).then(({ rows: [row] }) => {
    order.push('query');
    return row.n as number;
  });
  const answer = fetch(`${app.url}/api/v1/openapi.json`).then(async (res) => {
    await res.arrayBuffer();
    order.push('request');
    return res.status;
  });
  t.is(await answer, 200);
  t.is(await query, rows);
  t.deepEqual(order, ['request', 'query']);
});
