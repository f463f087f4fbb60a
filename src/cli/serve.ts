import type { Server } from 'node:http';
import { serveCommands } from '../db/control-socket.js';
import { openDatabase } from '../db/database.js';
import { onPoolerMismatch } from '../db/pooler.js';
import { createApp } from '../server/app.js';
import { InFlight } from '../server/in-flight.js';
import { createMailer } from '../mail/mailer.js';
import { keepSendingReminders } from '../quotes/reminders.js';
import { log } from '../log.js';
import { listenForAuthChanges, SessionCache, sessionCacheSeconds } from '../auth/session-cache.js';
import { scheduleDeliveries } from '../webhooks/run.js';
import { workerSettings } from '../webhooks/worker.js';
import { keepPurgingTracking } from '../tracking/retention.js';
import { keepMaintainingTables } from '../db/maintenance.js';
import { scheduleBackups } from '../ops/scheduled-backup.js';
import { commandConfig, ensureSchema, loadEnvFile, runServed } from './context.js';
import { say, type CommandIo } from './io.js';

/** `quoting serve`; `runProgram` runs the commands sent through the control socket (passed in: the program's entry imports this file). */
export async function serve(opts: Record<string, unknown>, io: CommandIo, runProgram: (args: string[], io: CommandIo) => Promise<number>): Promise<void> {
  // Set in the real environment (not a copy assigned to process.env), so an env file loaded next still reaches it.
  if (opts.port !== undefined) process.env.PORT = String(opts.port);
  if (opts.host !== undefined) process.env.HOST = String(opts.host);
  const envFile = loadEnvFile(opts);
  const config = commandConfig(opts);
  // Ten connections by default: a request holds one for its transaction; see "Scaling" in README.md for sizing.
  const database = await openDatabase({
    databaseUrl: config.DATABASE_URL,
    dataDir: config.DATA_DIR,
    poolMax: config.DATABASE_POOL_MAX ?? 10,
    pooler: config.DATABASE_POOLER,
    listenUrl: config.DATABASE_LISTEN_URL,
  });
  try {
    await ensureSchema(database, Boolean(opts.migrate));
  } catch (err) {
    await database.close();
    throw err;
  }
  const mailer = createMailer(config.SMTP_URL, config.MAIL_FROM);
  const sessionCache = new SessionCache(sessionCacheSeconds(config, database) * 1000);
  const inFlight = new InFlight();
  const app = createApp({ db: database.knex, config, mailer, sessionCache }, { inFlight });
  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(config.PORT, config.HOST, () => resolve(s)).once('error', reject);
  }).catch(async (err: NodeJS.ErrnoException) => {
    await database.close();
    throw new Error(err.code === 'EADDRINUSE' ? `port ${config.PORT} on ${config.HOST} is already in use; set PORT or pass --port` : err.message);
  });
  // Auth changes made elsewhere are announced by NOTIFY: on PostgreSQL by other processes (more
  // servers, the CLI); on the embedded database by the commands this process runs for the CLI.
  // Started once the port is ours (before any request is read), so a failed start leaves no connection open.
  const stopListening = listenForAuthChanges(database, sessionCache);
  // On PostgreSQL, `quoting worker` (cron or --watch) delivers webhooks; on the embedded database only this process can.
  const stopDeliveries = database.kind === 'pglite' ? await scheduleDeliveries(database, workerSettings(config)) : async () => {};
  // Likewise the purge of expired tracking events (on PostgreSQL, each `quoting worker` run purges).
  const stopSchedules = new AbortController();
  const purging = database.kind === 'pglite' ? keepPurgingTracking(database.knex, config, stopSchedules.signal) : Promise.resolve();
  // And autovacuum's work, which PGlite has no process for (db/maintenance.ts); between requests where it can be.
  // And the reminders before expiry (on PostgreSQL, `quoting worker` sends them).
  const reminding = database.kind === 'pglite' ? keepSendingReminders(database.knex, mailer, config.APP_URL, { events: config.WEBHOOKS_ENABLED }, stopSchedules.signal) : Promise.resolve();
  const maintaining = database.kind === 'pglite' ? keepMaintainingTables(database.knex, stopSchedules.signal, () => inFlight.drained()) : Promise.resolve();
  // Scheduled backups, on the embedded database only: on PostgreSQL the installer's timer runs `quoting backup`
  // (several servers would each write one).
  const stopBackups = database.kind === 'pglite' && config.BACKUP_SCHEDULE ? scheduleBackups(config, database) : async () => {};
  if (database.kind === 'postgres' && config.BACKUP_SCHEDULE) log.info('BACKUP_SCHEDULE is not run by quoting serve on PostgreSQL: the quoting-backup timer (install.sh --backup) runs quoting backup');
  // The embedded database admits no other process: the other commands run here, sent through DATA_DIR/quoting.sock,
  // with this server's settings (the caller sends none).
  const stopCommands =
    database.kind === 'pglite'
      ? await serveCommands(config.DATA_DIR, (request, streams) =>
          runServed({ database, env: process.env, envFile, caller: request.env, cwd: request.cwd, serverPid: process.pid, input: request.input }, () =>
            runProgram(request.argv, streams),
          ),
        ).catch((err: Error) => {
          log.warn('the control socket could not be opened; other commands on this DATA_DIR will be refused', { error: err.message });
          return async () => {};
        })
      : async () => {};
  server.keepAliveTimeout = 65_000;
  // An import's upload is read at the pace of the import (streamed, not buffered), so a request may last as long
  // as a product import's window: Node's default of 5 minutes would cut a slow one short with a 408.
  server.requestTimeout = (config.IMPORT_WINDOW_SECONDS + 120) * 1000;
  let stopping = false;
  let exitCode = 0;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info('stopping', { signal });
    // Let requests and commands in flight finish (up to 10 s) before the database goes away under them: the
    // connections to close, and every request being handled, including those whose client has already left.
    const closed = new Promise((resolve) => server.close(resolve));
    server.closeIdleConnections();
    const settled = Promise.all([closed, inFlight.drained()]);
    await Promise.all([Promise.race([settled, new Promise((resolve) => setTimeout(resolve, 10_000).unref())]), stopCommands(10_000)]);
    mailer?.close();
    await stopDeliveries();
    stopSchedules.abort();
    await Promise.all([purging, reminding, maintaining, stopBackups()]);
    await stopListening();
    await database.close();
    process.exit(exitCode);
  };
  // Installed before the banner: whoever waits for the banner (an operator, systemd, a test) may signal at
  // once, and until a handler is installed the kernel's default action kills the process mid-way. `on`,
  // not `once`: a library that restores the terminal on a signal (ink, for an import run here for a
  // terminal) re-sends the signal when it finds itself the only listener left, killing the process before
  // the database is closed; `stopping` makes a second signal harmless.
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  // DATABASE_URL is a transaction pooler after all (one that hid from the check at start): its one line is logged.
  onPoolerMismatch(() => {
    exitCode = 1;
    void stop('pooler');
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  const where = database.kind === 'pglite' ? `embedded PGlite in ${config.DATA_DIR}` : 'PostgreSQL';
  say(io.stdout, `Quoting listening on http://${config.HOST}:${port} (database: ${where}); API document at ${config.APP_URL}/api/v1/openapi.json`);
}
