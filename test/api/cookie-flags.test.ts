import test from 'ava';
import { startApp, uniqueEmail, type TestApp } from '../helpers/app.js';
import { startSmtp } from '../helpers/smtp.js';
import { tokenFromMail } from '../helpers/members.js';
import { cookieAttributes, cookieProblems } from '../helpers/cookies.js';
import type { Response } from '../helpers/client.js';

// Every answer that sets or clears the session cookie keeps its flags (HttpOnly, SameSite=Lax,
// Path=/), Secure exactly when the request came over HTTPS as the app sees it. (The app helper
// also checks every Set-Cookie of every test file the same way.)
let plain: TestApp;
let proxied: TestApp;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
test.before(async () => {
  smtp = await startSmtp();
  [plain, proxied] = await Promise.all([startApp({ SMTP_URL: smtp.url }), startApp({ SMTP_URL: smtp.url, TRUST_PROXY: '1' })]);
});
test.after.always(async () => {
  await plain?.close();
  await proxied?.close();
  await smtp?.close();
});

const PASSWORD = 'correct horse battery';

const cases = [
  { name: 'plain HTTP', app: () => plain, proto: undefined, https: false },
  { name: 'X-Forwarded-Proto https without TRUST_PROXY', app: () => plain, proto: 'https', https: false },
  { name: 'TRUST_PROXY with X-Forwarded-Proto https', app: () => proxied, proto: 'https', https: true },
  { name: 'TRUST_PROXY with X-Forwarded-Proto http', app: () => proxied, proto: 'http', https: false },
];

for (const { name, app, proto, https } of cases) {
  test(`${name}: signup, login, invite accept and logout set the session cookie with its flags${https ? ', Secure' : ''}`, async (t) => {
    const headers: Record<string, string> = proto ? { 'x-forwarded-proto': proto } : {};
    const sessionCookie = (step: string, res: Response, status: number) => {
      t.is(res.status, status, `${step}: ${res.text}`);
      const cookies = res.headers.getSetCookie().filter((c) => cookieAttributes(c).name === 'quoting_session');
      t.is(cookies.length, 1, `${step} sends one quoting_session cookie`);
      t.deepEqual(cookieProblems(cookies[0], https), [], `${step}: ${cookies[0]}`);
      return cookies[0];
    };
    const owner = app().client();
    const email = uniqueEmail('cookie');
    sessionCookie('signup', await owner.post('/api/v1/auth/signup', { email, password: PASSWORD, name: 'C', workspace_name: `Cookies ${name}` }, { headers }), 201);
    sessionCookie('login', await owner.post('/api/v1/auth/login', { email, password: PASSWORD }, { headers }), 200);

    const invitee = uniqueEmail('invitee');
    t.is((await owner.post('/api/v1/invites', { email: invitee }, { headers })).status, 201);
    const token = tokenFromMail(await smtp.waitFor(invitee));
    const member = app().client();
    sessionCookie('invite accept', await member.post('/api/v1/invites/accept', { token, name: 'M', password: PASSWORD }, { headers }), 201);

    const cleared = sessionCookie('logout', await member.post('/api/v1/auth/logout', undefined, { headers }), 200);
    t.regex(cleared, /^quoting_session=;/);
    t.is((await member.get('/api/v1/auth/me', { headers })).status, 401);
  });
}

test('the flag check itself refuses a cookie without HttpOnly or SameSite', (t) => {
  t.deepEqual(cookieProblems('quoting_session=; path=/; expires=Thu, 01 Jan 1970 00:00:00 GMT', false), ['cookie quoting_session: no HttpOnly', 'cookie quoting_session: not SameSite=Lax']);
  t.deepEqual(cookieProblems('quoting_session=x; path=/; samesite=lax; httponly', true), ['cookie quoting_session: not Secure over HTTPS']);
  t.deepEqual(cookieProblems('quoting_session=x; path=/; samesite=lax; secure; httponly', true), []);
});
