import path from 'node:path';
import test from 'ava';
import { runCli, tempDir } from '../helpers/cli.js';

interface Finding {
  id: string;
  title: string;
  status: 'ok' | 'warn' | 'fail';
  message: string;
  fix: string | null;
}

/** The sign-up check of `quoting doctor --json` under these settings (no database: the check reads settings only). */
async function signupCheck(dataDir: string, env: Record<string, string>): Promise<Finding> {
  const result = await runCli(['doctor', '--json'], { env: { DATA_DIR: dataDir, ...env }, timeoutMs: 180_000 });
  const checks = (JSON.parse(result.stdout) as { checks: Finding[] }).checks;
  const found = checks.find((c) => c.id === 'signup');
  if (!found) throw new Error(`no signup check in ${result.stdout} ${result.stderr}`);
  return found;
}

test('doctor warns when sign-up is open on a public APP_URL, with its fix; closed, or on a private address, it is ok', async (t) => {
  t.timeout(600_000);
  const dataDir = path.join(tempDir(t), 'none');

  const open = await signupCheck(dataDir, { APP_URL: 'https://quotes.example.com', TRUST_PROXY: '1' });
  t.deepEqual(open, {
    id: 'signup',
    title: 'Sign-up',
    status: 'warn',
    message: 'open (the default) on the public address https://quotes.example.com: anyone who finds it can create a workspace here',
    fix: "set SIGNUP=closed in the environment: accounts then come from invites and 'quoting workspace create' (leave it open only if anyone may sign up)",
  });

  const explicit = await signupCheck(dataDir, { APP_URL: 'https://quotes.example.com', TRUST_PROXY: '1', SIGNUP: 'open' });
  t.is(explicit.status, 'warn');
  t.regex(explicit.message, /^open on the public address https:\/\/quotes\.example\.com: /);

  const closed = await signupCheck(dataDir, { APP_URL: 'https://quotes.example.com', TRUST_PROXY: '1', SIGNUP: 'closed' });
  t.like(closed, { status: 'ok', message: 'closed: accounts come from invites and the CLI', fix: null });

  const local = await signupCheck(dataDir, { APP_URL: 'http://127.0.0.1:3000' });
  t.like(local, { status: 'ok', message: 'open, on http://127.0.0.1:3000, which is not a public address', fix: null });
});
