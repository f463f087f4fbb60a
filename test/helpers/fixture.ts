import type { TestFn } from 'ava';
import { signUpOwner, startApp, type Owner, type StartOptions, type TestApp } from './app.js';
import { startSmtp } from './smtp.js';

export type Smtp = Awaited<ReturnType<typeof startSmtp>>;

export interface AppOptions extends StartOptions {
  /** Settings over the defaults, as `startApp` takes them. */
  env?: Record<string, string>;
  /** A loopback SMTP server, started first; the app's SMTP_URL points at it. */
  smtp?: boolean;
}

export interface OwnerAppOptions extends AppOptions {
  /** The owner's workspace name. */
  workspace?: string;
}

type WithSmtp<O> = O extends { smtp: true } ? { smtp: Smtp } : {};

/**
 * This test file's app on a fresh database, started by a serial before hook (so the file's own before hooks,
 * declared after this call, run once it is up) and closed after the file's last test. The returned objects
 * are filled in place by that hook: read them in tests and hooks, not at the file's top level.
 */
export function useApp<const O extends AppOptions>(test: TestFn, options?: O): { app: TestApp } & WithSmtp<O> {
  const app = {} as TestApp;
  const smtp = {} as Smtp;
  test.serial.before(async () => {
    const { env = {}, smtp: mail, ...start } = options ?? {};
    if (mail) Object.assign(smtp, await startSmtp());
    Object.assign(app, await startApp(mail ? { SMTP_URL: smtp.url, ...env } : env, undefined, start));
  });
  test.after.always(async () => {
    await app.close?.();
    await smtp.close?.();
  });
  return (options?.smtp ? { app, smtp } : { app }) as { app: TestApp } & WithSmtp<O>;
}

/** `useApp`, and a user signed up with a workspace of their own: `owner.client` holds the session, `owner.keys` the API keys. */
export function useOwnerApp<const O extends OwnerAppOptions>(test: TestFn, options?: O): { app: TestApp; owner: Owner } & WithSmtp<O> {
  const { workspace, ...rest } = options ?? {};
  const fixture = useApp(test, rest as O);
  const owner = {} as Owner;
  test.serial.before(async () => {
    Object.assign(owner, await signUpOwner(fixture.app, workspace));
  });
  return { ...fixture, owner } as { app: TestApp; owner: Owner } & WithSmtp<O>;
}
