import type { Server } from 'node:http';
import { openDatabase } from '../db/database.js';
import { createApp } from '../http/app.js';
import { createMailer } from '../mail/mailer.js';
import { log } from '../log.js';
import { listenForAuthChanges, SessionCache } from '../auth/session-cache.js';
import { scheduleDeliveries } from '../webhooks/run.js';
import { workerSettings } from '../webhooks/worker.js';
import { commandConfig, ensureSchema } from './context.js';

export async function serve(opts: Record<string, unknown>): Promise<void> {
  // Set in the real environment (not a copy assigned to process.env), so an env file loaded next still reaches it.
  if (opts.port !== undefined) process.env.PORT = String(opts.port);
  if (opts.host !== undefined) process.env.HOST = String(opts.host);
  const config = commandConfig(opts);
  const database = await openDatabase({ databaseUrl: config.DATABASE_URL, dataDir: config.DATA_DIR });
  try {
    await ensureSchema(database, Boolean(opts.migrate));
  } catch (err) {
    await database.close();
    throw err;
  }
  const mailer = createMailer(config.SMTP_URL, config.MAIL_FROM);
  const sessionCache = new SessionCache(config.SESSION_CACHE_SECONDS * 1000);
  const app = createApp({ db: database.knex, config, mailer, sessionCache });
  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(config.PORT, config.HOST, () => resolve(s)).once('error', reject);
  }).catch(async (err: NodeJS.ErrnoException) => {
    await database.close();
    throw new Error(err.code === 'EADDRINUSE' ? `port ${config.PORT} on ${config.HOST} is already in use; set PORT or pass --port` : err.message);
  });
  // Other processes on the same PostgreSQL (more servers, the CLI) announce auth changes by NOTIFY.
  // Started once the port is ours (before any request is read), so a failed start leaves no connection open.
  const stopListening = database.kind === 'postgres' ? listenForAuthChanges(database, sessionCache) : async () => {};
  // On PostgreSQL, `quoting worker` (cron or --watch) delivers webhooks; on the embedded database only this process can.
  const stopDeliveries = database.kind === 'pglite' ? await scheduleDeliveries(database, workerSettings(config)) : async () => {};
  server.keepAliveTimeout = 65_000;
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  const where = database.kind === 'pglite' ? `embedded PGlite in ${config.DATA_DIR}` : 'PostgreSQL';
  console.log(`Quoting listening on http://${config.HOST}:${port} (database: ${where}); API document at ${config.APP_URL}/api/v1/openapi.json`);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info('stopping', { signal });
    // Let requests in flight finish (up to 10 s) before the database goes away under them.
    const closed = new Promise((resolve) => server.close(resolve));
    server.closeIdleConnections();
    await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 10_000).unref())]);
    mailer?.close();
    await stopDeliveries();
    await stopListening();
    await database.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop('SIGINT'));
  process.once('SIGTERM', () => void stop('SIGTERM'));
}
