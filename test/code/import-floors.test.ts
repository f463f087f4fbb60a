import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';

// The floors of CONTRIBUTING.md ("Floors: which folder may import which"), read from the source's own imports.

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const src = path.join(root, 'src');

/** Every source file under src/, as a path relative to src/ ("quotes/service.ts"). */
function sourceFiles(dir = src): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') ? [path.relative(src, full)] : [];
  });
}

/** The files of src/ a file imports (static, dynamic and type-only imports alike). */
function importsOf(file: string): string[] {
  const text = fs.readFileSync(path.join(src, file), 'utf8');
  const found = new Set<string>();
  for (const match of text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)'(\.{1,2}\/[^']+)'/g)) {
    const target = path.relative(src, path.resolve(path.dirname(path.join(src, file)), match[1])).replace(/\.js$/, '.ts');
    if (!target.startsWith('..')) found.add(target);
  }
  return [...found];
}

/** A file's folder under src/ ("quotes"), or the file itself for the ground floor's single files ("errors.ts"). */
function folderOf(file: string): string {
  return file.includes('/') ? file.split('/')[0] : file;
}

const files = sourceFiles();
const edges = files.flatMap((from) => importsOf(from).map((to) => ({ from, to })));
const ground = new Set(['config.ts', 'errors.ts', 'log.ts', 'metrics.ts', 'repeat.ts', 'access.ts', 'accounts.ts', 'crypto.ts', 'money.ts', 'dates.ts', 'templates.ts', 'schema']);
const data = new Set(['db', 'mail']);
const areas = ['auth', 'workspaces', 'customers', 'products', 'channels', 'quotes', 'orders', 'imports', 'webhooks', 'payments', 'tracking', 'ops', 'events'];

function offending(rule: (edge: { from: string; to: string }) => boolean): string[] {
  return edges.filter(rule).map(({ from, to }) => `${from} -> ${to}`);
}

test('the source tree is read: every area and the kit are there, with their imports', (t) => {
  for (const folder of [...areas, 'http', 'server', 'web', 'cli', 'db']) t.true(files.some((f) => folderOf(f) === folder), folder);
  t.true(edges.length > 100);
  t.true(edges.some(({ from, to }) => from === 'server/app.ts' && to === 'quotes/routes.ts'));
});

test('the ground floor imports nothing above it, and the data floor only the ground', (t) => {
  t.deepEqual(offending(({ from, to }) => ground.has(folderOf(from)) && !ground.has(folderOf(to))), []);
  t.deepEqual(offending(({ from, to }) => data.has(folderOf(from)) && !data.has(folderOf(to)) && !ground.has(folderOf(to))), []);
});

test('the route kit (http/) imports the ground and data floors only: no area, no server, no cli', (t) => {
  t.deepEqual(offending(({ from, to }) => folderOf(from) === 'http' && !['http', ...data].includes(folderOf(to)) && !ground.has(folderOf(to))), []);
});

test('only the CLI imports the server, and nothing imports the CLI', (t) => {
  t.deepEqual(offending(({ from, to }) => folderOf(to) === 'server' && !['server', 'cli'].includes(folderOf(from))), []);
  t.deepEqual(offending(({ from, to }) => folderOf(to) === 'cli' && folderOf(from) !== 'cli'), []);
});

test('the app pages (web/) sit beside the API routes: only the server imports them, and they import no server or CLI file', (t) => {
  t.deepEqual(offending(({ from, to }) => folderOf(to) === 'web' && !['web', 'server'].includes(folderOf(from))), []);
  t.deepEqual(offending(({ from, to }) => folderOf(from) === 'web' && ['server', 'cli'].includes(folderOf(to))), []);
});

test("services and schemas import no route file, and a route file imports only its own area's files among the areas", (t) => {
  const isRoutes = (file: string) => /(^|\/)routes\.ts$/.test(file) || file === 'tracking/tag.ts';
  t.deepEqual(offending(({ from, to }) => isRoutes(to) && !['server', 'cli'].includes(folderOf(from))), []);
  // pages/ is the public pages' glue: the quote page and its Pay button, over quotes/ and payments/.
  t.deepEqual(offending(({ from, to }) => isRoutes(from) && areas.includes(folderOf(from)) && areas.includes(folderOf(to)) && folderOf(to) !== folderOf(from)), []);
});

test('no circle between folders', (t) => {
  const next = new Map<string, Set<string>>();
  for (const { from, to } of edges) {
    const [a, b] = [folderOf(from), folderOf(to)];
    if (a === b) continue;
    if (!next.has(a)) next.set(a, new Set());
    next.get(a)!.add(b);
  }
  const circles: string[] = [];
  // A folder on a circle reaches itself: walk from each, one path per circle found is enough to name it.
  for (const start of next.keys()) {
    const seen = new Set<string>();
    const walk = (at: string, trail: string[]): void => {
      for (const to of next.get(at) ?? []) {
        if (to === start) circles.push([...trail, to].join(' -> '));
        else if (!seen.has(to)) {
          seen.add(to);
          walk(to, [...trail, to]);
        }
      }
    };
    walk(start, [start]);
  }
  t.deepEqual(circles, []);
});
