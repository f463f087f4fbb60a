import test from 'ava';
import { Client } from '../helpers/client.js';
import { freePort, migratedBackend, runCli, startServe, usingPostgres } from '../helpers/cli.js';

// Adding people without mail: `quoting user add`, `workspace list`, `workspace create --owner-name`. Each runs
// alone and, on the embedded database while `quoting serve` holds it, inside the server (through its socket).

const via = usingPostgres ? 'beside a running server (PostgreSQL)' : 'through the running server (embedded database)';

async function signIn(url: string, email: string, password: string) {
  const client = new Client(url);
  const login = await client.post('/api/v1/auth/login', { email, password });
  return { client, login };
}

test(`workspace create --owner-name, user add (password, then link) and workspace list, alone and ${via}`, async (t) => {
  t.timeout(600_000);
  const env = await migratedBackend(t);

  // Alone: no server holds the database.
  const created = await runCli(['workspace', 'create', '--name', 'Acme Tools', '--slug', 'acme', '--owner-email', 'olive@acme.test', '--owner-name', 'Olive Owner', '--password', 'owner password 1'], { env });
  t.is(created.code, 0, created.stderr);
  t.regex(created.stdout, /^Owner: +Olive Owner <olive@acme\.test>$/m);
  const added = await runCli(['user', 'add', '--workspace', 'acme', '--email', 'mia@acme.test', '--name', 'Mia Member'], { env });
  t.is(added.code, 0, added.stderr);
  const lines = added.stdout.trimEnd().split('\n');
  t.is(lines[0], 'User mia@acme.test added to "Acme Tools" (slug acme) as member.');
  const password = /^Password: +(\S+) +\(shown once/.exec(lines[1] ?? '')?.[1];
  t.truthy(password, added.stdout);
  t.is(lines.length, 2);
  const listed = await runCli(['workspace', 'list'], { env });
  t.is(listed.code, 0, listed.stderr);
  t.deepEqual(listed.stdout.trimEnd().split('\n').map((line) => line.split(/ {2,}/)), [
    ['SLUG', 'NAME', 'STATUS', 'USERS'],
    ['acme', 'Acme Tools', 'active', '2'],
  ]);

  // The link names the app's address: a command run inside the server takes the server's APP_URL, not the caller's.
  const server = await startServe(t, ['--port', String(await freePort())], { env: { ...env, APP_URL: 'https://quotes.example.com/' } });
  const owner = await signIn(server.url, 'olive@acme.test', 'owner password 1');
  t.is(owner.login.status, 200, owner.login.text);
  t.is((await owner.client.get('/api/v1/auth/me')).body.data.user.name, 'Olive Owner');
  const member = await signIn(server.url, 'mia@acme.test', password!);
  t.is(member.login.status, 200, member.login.text);
  const me = (await member.client.get('/api/v1/auth/me')).body.data;
  t.like(me, { user: { email: 'mia@acme.test', name: 'Mia Member', role: 'member' }, workspace: { slug: 'acme' } });

  // With the server running (on the embedded database the commands run inside it), and APP_URL set: a link.
  const linked = await runCli(['user', 'add', '--workspace', 'acme', '--email', 'otto@acme.test', '--role', 'owner'], {
    env: { ...env, APP_URL: 'https://quotes.example.com/' },
  });
  t.is(linked.code, 0, linked.stderr);
  const [first, second, ...rest] = linked.stdout.trimEnd().split('\n');
  t.is(first, 'User otto@acme.test added to "Acme Tools" (slug acme) as owner.');
  const token = /^Set-password link: https:\/\/quotes\.example\.com\/reset\/([\w-]+) +\(send it to them: it works once, for 7 days\)$/.exec(second)?.[1];
  t.truthy(token, linked.stdout);
  t.deepEqual(rest, []);
  t.false(linked.stdout.includes('Password'), 'no password when a link is given');
  const anon = new Client(server.url);
  t.is((await anon.post('/api/v1/auth/password-reset/confirm', { token, password: 'otto chose this one' })).status, 200);
  t.is((await anon.post('/api/v1/auth/password-reset/confirm', { token, password: 'otto chose again' })).status, 410, 'the link works once');
  const otto = await signIn(server.url, 'otto@acme.test', 'otto chose this one');
  t.is(otto.login.status, 200, otto.login.text);
  t.is((await otto.client.get('/api/v1/auth/me')).body.data.user.role, 'owner');

  const json = await runCli(['workspace', 'list', '--json'], { env });
  t.is(json.code, 0, json.stderr);
  t.deepEqual(JSON.parse(json.stdout), [{ slug: 'acme', name: 'Acme Tools', status: 'active', trial_ends_at: null, users: 3 }]);

  // Failures: one line each, exit 1; a bad role is a usage error (exit 2).
  const [taken, nowhere, badEmail, badRole, missing] = await Promise.all([
    runCli(['user', 'add', '--workspace', 'acme', '--email', 'mia@acme.test'], { env }),
    runCli(['user', 'add', '--workspace', 'nope', '--email', 'new@acme.test'], { env }),
    runCli(['user', 'add', '--workspace', 'acme', '--email', 'not-an-email'], { env }),
    runCli(['user', 'add', '--workspace', 'acme', '--email', 'x@acme.test', '--role', 'admin'], { env }),
    runCli(['user', 'add', '--email', 'x@acme.test'], { env }),
  ]);
  t.deepEqual([taken.code, taken.errorLines], [1, ['error: That email is already taken.']]);
  t.deepEqual([nowhere.code, nowhere.errorLines], [1, ['error: no workspace with slug "nope"']]);
  t.is(badEmail.code, 1);
  t.is(badEmail.errorLines.length, 1);
  t.regex(badEmail.errorLines[0], /^error: email: /);
  t.is(badRole.code, 2);
  t.regex(badRole.errorLines[0], /^error: option '--role <role>' argument 'admin' is invalid/);
  t.is(missing.code, 2);
  t.regex(missing.errorLines[0], /^error: required option '--workspace <slug>' not specified/);
  t.deepEqual(await server.stop(), { code: 0, signal: null });
});

test('workspace list on a database without workspaces says so', async (t) => {
  t.timeout(300_000);
  const env = await migratedBackend(t);
  const result = await runCli(['workspace', 'list'], { env });
  t.is(result.code, 0, result.stderr);
  t.is(result.stdout, "No workspace yet: create one with 'quoting workspace create'.\n");
});
