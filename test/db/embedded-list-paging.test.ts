import test from 'ava';
import { openPglite, type Database } from '../../src/db/database.js';
import { EMBEDDED_PAGE_ROWS, textPages, type JsonPage } from '../../src/db/keyset.js';
import { startPgliteThread } from '../../src/db/pglite-thread.js';

// On the embedded database PGlite's thread reads a list's next page while the current one is sent
// (src/db/pglite-worker.ts, readAheads). A page read ahead must never be older than a statement sent before its
// request: these lists run on a PGlite in its thread, as `quoting serve` runs it, whichever database the rest of
// the suite runs on.

const ROWS = 2 * EMBEDDED_PAGE_ROWS + 500; // three pages
let database: Database;
test.before(async () => {
  database = await openPglite(await startPgliteThread());
  await database.knex.raw('create table read_ahead_probe (workspace_id int not null, id int not null, json text not null, primary key (workspace_id, id))');
  for (const workspace of [1, 2]) {
    await database.knex.raw(
      `insert into read_ahead_probe select ?, n, '{"id":' || n || ',"v":"a"}' from generate_series(1, ?) n`,
      [workspace, ROWS],
    );
  }
});
test.after.always(async () => {
  await database?.close();
});

/** A page's text; its lent bytes given back, as the server gives them back once written. */
function pageText(page: JsonPage): string {
  if (typeof page === 'string' || Buffer.isBuffer(page)) return page.toString();
  const text = page.chunks.map((chunk) => chunk.toString()).join('');
  for (const chunk of page.chunks) page.giveBack(chunk);
  return text;
}

const expected = (v: (id: number) => string) => Array.from({ length: ROWS }, (_, i) => `{"id":${i + 1},"v":"${v(i + 1)}"}`).join(',');

test.serial('a list of three pages comes back whole and in order', async (t) => {
  const pages: string[] = [];
  for await (const page of textPages(database.knex, 'read_ahead_probe', 1)) pages.push(pageText(page));
  t.is(pages.length, 3);
  t.is(pages.join(','), expected(() => 'a'));
});

test.serial('a write sent between two pages shows in the later page, though that page may have been read ahead', async (t) => {
  const pages = textPages(database.knex, 'read_ahead_probe', 1);
  const first = await pages.next();
  t.false(first.done);
  const texts = [pageText(first.value as JsonPage)];
  // In the second page, which PGlite's thread began to read as soon as it had sent the first.
  await database.knex.raw(`update read_ahead_probe set json = '{"id":' || id || ',"v":"b"}' where workspace_id = 1 and id = ?`, [EMBEDDED_PAGE_ROWS + 7]);
  for await (const page of pages) texts.push(pageText(page));
  t.is(texts.join(','), expected((id) => (id === EMBEDDED_PAGE_ROWS + 7 ? 'b' : 'a')));
  await database.knex.raw(`update read_ahead_probe set json = '{"id":' || id || ',"v":"a"}' where workspace_id = 1`);
});

test.serial('two lists read at once, page by page in turn, each come back whole', async (t) => {
  const lists = [textPages(database.knex, 'read_ahead_probe', 1), textPages(database.knex, 'read_ahead_probe', 2)];
  const texts: string[][] = [[], []];
  for (let open = 2; open > 0; ) {
    open = 0;
    for (const [i, list] of lists.entries()) {
      const next = await list.next();
      if (next.done) continue;
      texts[i].push(pageText(next.value));
      open++;
    }
  }
  t.is(texts[0].join(','), expected(() => 'a'));
  t.is(texts[1].join(','), expected(() => 'a'));
});

test.serial('a list left unfinished leaves nothing that a later statement or list would see', async (t) => {
  const abandoned = textPages(database.knex, 'read_ahead_probe', 1);
  pageText((await abandoned.next()).value as JsonPage);
  await abandoned.return(undefined);
  await database.knex.raw(`update read_ahead_probe set json = '{"id":' || id || ',"v":"c"}' where workspace_id = 1 and id > ?`, [EMBEDDED_PAGE_ROWS]);
  const pages: string[] = [];
  for await (const page of textPages(database.knex, 'read_ahead_probe', 1)) pages.push(pageText(page));
  t.is(pages.join(','), expected((id) => (id > EMBEDDED_PAGE_ROWS ? 'c' : 'a')));
});
