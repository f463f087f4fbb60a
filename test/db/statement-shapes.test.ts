import test from 'ava';
import type { Knex } from 'knex';
import { listRead } from '../../src/db/numbered-pages.js';
import { scoped, whereExact, whereSearch } from '../../src/db/scoped.js';
import { shapedStatement } from '../../src/db/statement-shapes.js';
import { signUpOwner, type Owner } from '../helpers/app.js';
import { useOwnerApp } from '../helpers/fixture.js';

// A statement compiled once per shape (statement-shapes.ts), as the quotes list page's is: later calls of a shape put
// their own values in the kept text, so every call answers for its own workspace and filters, and a value the builder
// transforms keeps its shape from being kept at all.

const { app, owner } = useOwnerApp(test, { workspace: 'Shapes' });
let other: Owner;

/** `count` quotes of the workspace, statuses draft and sent in turn, customer names `<tag> <n>`. */
async function bulk(workspaceId: number, count: number, tag: string): Promise<void> {
  await app.db.raw(
    `insert into quotes (workspace_id, quote_number, status, customer_name, public_token)
     select ?, ? || lpad(g::text, 6, '0'), (array['draft', 'sent'])[1 + g % 2], ? || ' ' || g, ? || g
     from generate_series(1, ?::int) g`,
    [workspaceId, `Q-${tag}-`, tag, `shapes-${tag}-`, count],
  );
}

test.before(async () => {
  other = await signUpOwner(app, 'Other shapes');
  await bulk(owner.workspace.id, 130, 'Mine');
  await bulk(other.workspace.id, 70, 'Theirs');
});

type Values = { workspaceId: number; status: string | undefined; q: string | undefined };

/** The ids of the workspace's quotes, filtered, newest first: as the database answers the plain query. */
async function expected(values: Values): Promise<number[]> {
  const query = whereSearch(whereExact(scoped(app.db, 'quotes as q', values.workspaceId), { 'q.status': values.status }), ['q.customer_name'], values.q);
  return (await query.orderBy('q.id', 'desc').select('q.id')).map((r: { id: number }) => r.id);
}

/** A shaped statement of the quotes' ids, filtered, and how many times it has been built. */
function counted(shape: string, search: boolean) {
  let builds = 0;
  const build = (v: Values): Knex.QueryBuilder => {
    builds++;
    const query = whereExact(scoped(app.db, 'quotes as q', v.workspaceId), { 'q.status': v.status });
    return (search ? whereSearch(query, ['q.customer_name'], v.q) : query).orderBy('q.id', 'desc').select('q.id');
  };
  const run = async (values: Values) => (await listRead<{ id: number }>(app.db, shapedStatement(app.db, shape, values, build))).map((r) => r.id);
  return { run, builds: () => builds };
}

test('a shape is built twice the first time (with the values, then with markers) and never again, each call answering for its own values', async (t) => {
  const { run, builds } = counted('ids by status', false);
  const calls: [Values, number][] = [
    [{ workspaceId: owner.workspace.id, status: 'sent', q: undefined }, 2],
    [{ workspaceId: other.workspace.id, status: 'sent', q: undefined }, 2],
    [{ workspaceId: owner.workspace.id, status: 'draft', q: undefined }, 2],
    // No status: another shape, learnt once.
    [{ workspaceId: owner.workspace.id, status: undefined, q: undefined }, 4],
    [{ workspaceId: other.workspace.id, status: undefined, q: undefined }, 4],
    [{ workspaceId: other.workspace.id, status: 'draft', q: undefined }, 4],
  ];
  for (const [values, built] of calls) {
    const ids = await run(values);
    t.true(ids.length > 0);
    t.deepEqual(ids, await expected(values), JSON.stringify(values));
    t.is(builds(), built, `builds after ${JSON.stringify(values)}`);
  }
});

test('a value the builder transforms (a search pattern) is not kept in a shape: each call is built, and answers for its own text', async (t) => {
  const { run, builds } = counted('ids by search', true);
  const calls: Values[] = [
    { workspaceId: owner.workspace.id, status: undefined, q: 'Mine 1' },
    { workspaceId: owner.workspace.id, status: undefined, q: 'Mine 2' },
    { workspaceId: other.workspace.id, status: undefined, q: 'Theirs 3' },
    { workspaceId: other.workspace.id, status: undefined, q: 'Mine' },
  ];
  for (const [i, values] of calls.entries()) {
    const ids = await run(values);
    t.deepEqual(ids, await expected(values), JSON.stringify(values));
    // The first call also tried the markers; after it, one build a call.
    t.is(builds(), i + 2);
  }
  t.is((await run(calls[3])).length, 0, 'the other workspace has no quote of mine');
});

test('the list page: owners of two workspaces asking for the same shapes in turn each see their own quotes', async (t) => {
  const rowsOf = (page: string) => [...page.matchAll(/<a href="\/app\/quotes\/(\d+)">/g)].map((m) => Number(m[1]));
  for (let round = 0; round < 2; round++) {
    for (const [who, workspaceId] of [[owner, owner.workspace.id], [other, other.workspace.id]] as const) {
      for (const [path, values, skip] of [
        ['/app/quotes', { status: undefined, q: undefined }, 0],
        ['/app/quotes?status=sent&page=2', { status: 'sent', q: undefined }, 50],
        ['/app/quotes?q=e+1', { status: undefined, q: 'e 1' }, 0],
      ] as const) {
        const ids = (await expected({ workspaceId, ...values })).slice(skip, skip + 50);
        const res = await who.client.get(path);
        t.is(res.status, 200);
        t.deepEqual(rowsOf(res.text), ids, `${path}, workspace ${workspaceId}, round ${round + 1}`);
      }
    }
  }
});
