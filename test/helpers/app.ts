import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Knex } from 'knex';
import { loadConfig, type Config } from '../../src/config.js';
import { createApp } from '../../src/http/app.js';
import { createMailer } from '../../src/mail/mailer.js';
import { setLogLevel } from '../../src/log.js';
import { SessionCache } from '../../src/auth/session-cache.js';
import { Client } from './client.js';
import { freshDatabase, type TestDatabase } from './database.js';

setLogLevel((process.env.TEST_LOG_LEVEL as 'debug') ?? 'silent');

export interface TestApp {
  url: string;
  db: Knex;
  database: TestDatabase;
  config: Config;
  /** The app's session cache: a test that edits sessions, users or workspaces in SQL evicts it, as the app's own writes do. */
  sessionCache: SessionCache;
  client(): Client;
  close(): Promise<void>;
}

/** The real app on an ephemeral port over a fresh database; `env` overrides settings. */
export async function startApp(env: Record<string, string> = {}, database?: TestDatabase): Promise<TestApp> {
  const db = database ?? (await freshDatabase());
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  const config = loadConfig({ APP_URL: url, PORT: String(port), ...env });
  const mailer = createMailer(config.SMTP_URL, config.MAIL_FROM);
  const sessionCache = new SessionCache();
  server.on('request', createApp({ db: db.knex, config, mailer, sessionCache }).callback());
  return {
    url,
    db: db.knex,
    database: db,
    config,
    sessionCache,
    client: () => new Client(url),
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      mailer?.close();
      await db.close();
    },
  };
}

let counter = 0;

/** A unique email per call, so tests in one file never collide. */
export function uniqueEmail(prefix = 'user'): string {
  return `${prefix}.${process.pid}.${Date.now()}.${++counter}@example.com`;
}

export interface Owner {
  client: Client;
  email: string;
  password: string;
  user: any;
  workspace: any;
  keys: { public_key: string; secret_key: string };
}

/** Signs up a user with a workspace; the client holds the session. */
export async function signUpOwner(app: TestApp, workspaceName = 'Acme'): Promise<Owner> {
  const client = app.client();
  const email = uniqueEmail('owner');
  const password = 'correct horse battery';
  const res = await client.post('/api/v1/auth/signup', { email, password, name: 'Olive Owner', workspace_name: workspaceName });
  if (res.status !== 201) throw new Error(`signup failed: ${res.status} ${res.text}`);
  return { client, email, password, user: res.body.data.user, workspace: res.body.data.workspace, keys: res.body.data.keys };
}
