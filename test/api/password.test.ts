import test from 'ava';
import { signUpOwner } from '../helpers/app.js';
import { useApp } from '../helpers/fixture.js';
import { Client } from '../helpers/client.js';
import { freePort, migratedBackend, runCli, startServe } from '../helpers/cli.js';

const { app } = useApp(test);

async function signIn(email: string, password: string): Promise<Client> {
  const client = app.client();
  const res = await client.post('/api/v1/auth/login', { email, password });
  if (res.status !== 200) throw new Error(`login failed: ${res.status} ${res.text}`);
  return client;
}

test('POST /auth/password changes the password, signs out the other sessions and keeps this one', async (t) => {
  const owner = await signUpOwner(app, 'Password Co');
  const other = await signIn(owner.email, owner.password);
  t.is((await other.get('/api/v1/auth/me')).status, 200, 'the other session works (and is cached) before the change');

  const res = await owner.client.post('/api/v1/auth/password', { current_password: owner.password, password: 'a brand new password' });
  t.is(res.status, 200, res.text);
  t.deepEqual(res.body, { version: 'v1', data: {} });

  t.is((await owner.client.get('/api/v1/auth/me')).status, 200, 'the session that made the change stays');
  t.is((await other.get('/api/v1/auth/me')).status, 401, 'the other session is revoked at once');
  t.is((await app.client().post('/api/v1/auth/login', { email: owner.email, password: owner.password })).status, 401, 'the old password no longer works');
  t.is((await app.client().post('/api/v1/auth/login', { email: owner.email, password: 'a brand new password' })).status, 200);
});

test('POST /auth/password with a wrong current password is 422 naming current_password, and changes nothing', async (t) => {
  const owner = await signUpOwner(app, 'Wrong Current');
  const other = await signIn(owner.email, owner.password);
  const res = await owner.client.post('/api/v1/auth/password', { current_password: 'not the password', password: 'a brand new password' });
  t.is(res.status, 422);
  t.regex(res.body.error, /^current_password: /);
  t.is((await other.get('/api/v1/auth/me')).status, 200, 'no session was revoked');
  t.is((await app.client().post('/api/v1/auth/login', { email: owner.email, password: owner.password })).status, 200, 'the password is unchanged');
});

test('POST /auth/password validates its fields (422 naming them) and needs a session (401)', async (t) => {
  const owner = await signUpOwner(app, 'Fields Co');
  const short = await owner.client.post('/api/v1/auth/password', { current_password: owner.password, password: 'short' });
  t.is(short.status, 422);
  t.regex(short.body.error, /^password: .*at least 10 characters/);
  const missing = await owner.client.post('/api/v1/auth/password', { password: 'a brand new password' });
  t.is(missing.status, 422);
  t.regex(missing.body.error, /^current_password\b/);
  const anonymous = await app.client().post('/api/v1/auth/password', { current_password: owner.password, password: 'a brand new password' });
  t.is(anonymous.status, 401);
  t.is((await app.client().post('/api/v1/auth/login', { email: owner.email, password: owner.password })).status, 200);
});

test('the API document says POST /auth/password needs a session and both passwords, the new one of 10 characters or more', async (t) => {
  const op = (await app.client().get('/api/v1/openapi.json')).body.paths['/api/v1/auth/password'].post;
  t.deepEqual(op.security, [{ session: [] }]);
  const body = op.requestBody.content['application/json'].schema;
  t.deepEqual(body.required, ['current_password', 'password']);
  t.is(body.properties.password.minLength, 10);
  t.deepEqual(['401', '422'].filter((status) => status in op.responses), ['401', '422']);
});

// The CLI, against a running server: on PostgreSQL the command runs on its own; on the embedded
// database it runs inside the server through the control socket. Either way the user's cached
// sessions must stop working at once.
test('quoting user set-password while serve runs: prints a generated password, revokes every session at once', async (t) => {
  const backend = await migratedBackend(t);
  const created = await runCli(['workspace', 'create', '--name', 'Cli Co', '--owner-email', 'cli@b.co', '--password', 'the first password'], { env: backend });
  t.is(created.code, 0, created.stderr);
  const server = await startServe(t, ['--port', String(await freePort())], { env: backend });
  const session = new Client(server.url);
  t.is((await session.post('/api/v1/auth/login', { email: 'cli@b.co', password: 'the first password' })).status, 200);
  t.is((await session.get('/api/v1/auth/me')).status, 200);

  const res = await runCli(['user', 'set-password', '--email', 'CLI@b.co'], { env: backend });
  t.is(res.code, 0, res.stderr);
  t.is(res.stderr, '');
  t.regex(res.stdout, /^Password of cli@b\.co changed; the user is signed out everywhere\.$/m);
  const generated = /^Password:\s+(\S+)\s+\(generated\)$/m.exec(res.stdout)?.[1];
  t.true((generated?.length ?? 0) >= 10, res.stdout);

  t.is((await session.get('/api/v1/auth/me')).status, 401, 'the signed-in session is revoked');
  t.is((await new Client(server.url).post('/api/v1/auth/login', { email: 'cli@b.co', password: 'the first password' })).status, 401);
  t.is((await new Client(server.url).post('/api/v1/auth/login', { email: 'cli@b.co', password: generated })).status, 200);

  // Given on stdin (`--password -`): not printed.
  const piped = await runCli(['user', 'set-password', '--email', 'cli@b.co', '--password', '-'], { env: backend, input: 'piped in password\n' });
  t.is(piped.code, 0, piped.stderr);
  t.notRegex(piped.stdout, /piped in password|^Password:/m);
  t.is((await new Client(server.url).post('/api/v1/auth/login', { email: 'cli@b.co', password: 'piped in password' })).status, 200);

  const unknown = await runCli(['user', 'set-password', '--email', 'nobody@b.co'], { env: backend });
  t.is(unknown.code, 1);
  t.is(unknown.stdout, '');
  t.is(unknown.stderr, 'error: no user with email nobody@b.co\n');
  const short = await runCli(['user', 'set-password', '--email', 'cli@b.co', '--password', 'short'], { env: backend });
  t.is(short.code, 1);
  t.is(short.errorLines.length, 1, short.stderr);
  t.regex(short.errorLines[0], /^error: password: .*at least 10 characters/);
  t.deepEqual(await server.stop(), { code: 0, signal: null });
});

test('quoting user set-password without --email is a usage error (exit 2)', async (t) => {
  const res = await runCli(['user', 'set-password']);
  t.is(res.code, 2);
  t.is(res.errorLines.length, 1, res.stderr);
  t.regex(res.errorLines[0], /^error: required option '--email <email>' not specified/);
});
