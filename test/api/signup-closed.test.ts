import test from 'ava';
import { startApp, signUpOwner, uniqueEmail } from '../helpers/app.js';
import { useApp } from '../helpers/fixture.js';
import { tokenFromMail } from '../helpers/members.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { createUser } from '../../src/auth/service.js';
import { createWorkspace } from '../../src/workspaces/service.js';

const { app: closed, smtp } = useApp(test, { env: { SIGNUP: 'closed' }, smtp: true });

const PASSWORD = 'correct horse battery';

test('SIGNUP is open by default; only open and closed are accepted', (t) => {
  t.is(loadConfig({}).SIGNUP, 'open');
  t.is(loadConfig({ SIGNUP: 'closed' }).SIGNUP, 'closed');
  const err = t.throws(() => loadConfig({ SIGNUP: 'invite-only' }), { instanceOf: ConfigError });
  t.regex(err!.message, /^SIGNUP expects open or closed/);
});

test.serial('SIGNUP=closed: POST /auth/signup is 403, with or without a workspace, and no account is created', async (t) => {
  for (const body of [
    { email: uniqueEmail('s'), password: PASSWORD, name: 'Sam' },
    { email: uniqueEmail('s'), password: PASSWORD, name: 'Sam', workspace_name: 'Side Door' },
  ]) {
    const client = closed.client();
    const res = await client.post('/api/v1/auth/signup', body);
    t.is(res.status, 403, res.text);
    t.regex(res.body.error, /Sign-up is closed/);
    t.is(res.headers.get('set-cookie'), null);
    t.is(await closed.db('users').where({ email: body.email }).first(), undefined);
  }
  t.is(Number((await closed.db('workspaces').where({ name: 'Side Door' }).count({ n: '*' }))[0].n), 0);
});

test.serial('SIGNUP=closed: accounts still come from the CLI path and from invites', async (t) => {
  // What `quoting workspace create` does: an owner and a workspace, created by the operator.
  const email = uniqueEmail('op');
  await closed.db.transaction(async (trx) => {
    const user = await createUser(trx, { email, password: PASSWORD, name: 'Operator' });
    await createWorkspace(trx, { name: 'Operated', ownerId: user.id });
  });
  const owner = closed.client();
  t.is((await owner.post('/api/v1/auth/login', { email, password: PASSWORD })).status, 200);

  const invitee = uniqueEmail('inv');
  t.is((await owner.post('/api/v1/invites', { email: invitee })).status, 201);
  const token = tokenFromMail(await smtp.waitFor(invitee));
  const accepted = await closed.client().post('/api/v1/invites/accept', { token, name: 'Ivy', password: PASSWORD });
  t.is(accepted.status, 201, accepted.text);
  t.is(accepted.body.data.user.email, invitee);
});

test('SIGNUP=open (the default) signs up as before', async (t) => {
  const open = await startApp();
  t.teardown(() => open.close());
  const owner = await signUpOwner(open);
  t.truthy(owner.workspace.id);
});
