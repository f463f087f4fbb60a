/**
 * A quote's send holds its transaction until the mail server takes the mail: a server that refuses it, or stops
 * answering, ends in a 502 with the quote still a draft, never in a request (and a row lock) held for minutes.
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import { SMTPServer } from 'smtp-server';
import { signUpOwner, startApp, uniqueEmail, type Owner, type TestApp } from '../helpers/app.js';

let silent: net.Server;
let refusing: SMTPServer;
const apps: TestApp[] = [];
const held: net.Socket[] = [];

const portOf = (server: net.Server) => (server.address() as AddressInfo).port;

test.before(async () => {
  // Greets, then answers nothing more, as a hung mail server does (nodemailer alone would wait 10 minutes).
  silent = net.createServer((socket) => {
    held.push(socket);
    socket.on('error', () => undefined);
    socket.resume();
    socket.write('220 hung.example ESMTP\r\n');
  });
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  refusing = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    disableReverseLookup: true,
    onRcptTo(_address, _session, callback) {
      callback(Object.assign(new Error('5.1.1 No such mailbox here'), { responseCode: 550 }));
    },
  });
  await new Promise<void>((resolve) => refusing.listen(0, '127.0.0.1', resolve));
});

test.after.always(async () => {
  for (const app of apps) await app.close();
  for (const socket of held) socket.destroy();
  await new Promise((resolve) => silent.close(resolve));
  await new Promise((resolve) => refusing.close(() => resolve(undefined)));
});

async function draftFor(owner: Owner): Promise<number> {
  const res = await owner.client.post('/api/v1/quotes', { customer: { email: uniqueEmail('buyer'), name: 'Bea' }, lines: [{ description: 'Work', price: '100' }] });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.text}`);
  return res.body.data.quote.id;
}

async function expectUnsent(t: import('ava').ExecutionContext, app: TestApp, owner: Owner, id: number) {
  const after = await owner.client.get(`/api/v1/quotes/${id}`);
  t.is(after.body.data.quote.status, 'draft');
  t.deepEqual(await app.db('quote_activities').where({ quote_id: id, type: 'sent' }).select('id'), []);
  t.deepEqual(await app.db('events').where({ type: 'quote.sent' }).select('id'), []);
}

for (const [what, url] of [
  ['refuses the recipient', () => `smtp://127.0.0.1:${portOf(refusing.server)}`],
  ['greets and then answers nothing', () => `smtp://127.0.0.1:${portOf(silent)}`],
] as const) {
  test.serial(`a mail server that ${what}: sending answers 502, and the quote stays a draft with no event`, async (t) => {
    t.timeout(180_000); // the silent server is given up on after SMTP_TIMEOUTS (20 s of silence)
    const app = await startApp({ SMTP_URL: url() });
    apps.push(app);
    const owner = await signUpOwner(app);
    const id = await draftFor(owner);
    const sent = await owner.client.post(`/api/v1/quotes/${id}/send`, {});
    t.is(sent.status, 502, sent.text);
    t.is(sent.body.error, 'The mail server did not accept the message; try again later.');
    await expectUnsent(t, app, owner, id);
    // The quote's row is free again: sending without mail goes through at once.
    const unmailed = await owner.client.post(`/api/v1/quotes/${id}/send`, { notify: false });
    t.is(unmailed.status, 200, unmailed.text);
    t.is(unmailed.body.data.quote.status, 'sent');
  });
}
