import type { Server } from 'node:http';
import { migrateLatest, migrationStatus } from '../db/migrations.js';
import { openDatabase } from '../db/database.js';
import { createApp } from '../http/app.js';
import { createMailer } from '../mail/mailer.js';
import { log } from '../log.js';
import { commandConfig } from './context.js';

export async function serve(opts: Record<string, unknown>): Promise<void> {
  const env = { ...process.env };
  if (opts.port !== undefined) env.PORT = String(opts.port);
  if (opts.host !== undefined) env.HOST = String(opts.host);
  process.env = env;
  const config = commandConfig(opts);
  const database = await openDatabase({ databaseUrl: config.DATABASE_URL, dataDir: config.DATA_DIR });
  try {
    await applyMigrations(database.kind, database.knex, Boolean(opts.migrate));
  } catch (err) {
    await database.close();
    throw err;
  }
  const mailer = createMailer(config.SMTP_URL, config.MAIL_FROM);
  const app = createApp({ db: database.knex, config, mailer });
  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(config.PORT, config.HOST, () => resolve(s)).once('error', reject);
  }).catch(async (err: NodeJS.ErrnoException) => {
    await database.close();
    throw new Error(err.code === 'EADDRINUSE' ? `port ${config.PORT} on ${config.HOST} is already in use; set PORT or pass --port` : err.message);
  });
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
    server.close();
    server.closeIdleConnections();
    mailer?.close();
    await database.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop('SIGINT'));
  process.once('SIGTERM', () => void stop('SIGTERM'));
}

/** The embedded database migrates itself; PostgreSQL, shared with other processes, only when asked. */
async function applyMigrations(kind: 'postgres' | 'pglite', knex: Parameters<typeof migrateLatest>[0], migrate: boolean): Promise<void> {
  if (kind === 'postgres' && !migrate) {
    const { pending } = await migrationStatus(knex);
    if (pending.length > 0) {
      throw new Error(
        `${pending.length} migration(s) pending (${pending.join(', ')}); run 'quoting migrate' first, or start with 'quoting serve --migrate'`,
      );
    }
    return;
  }
  const applied = await migrateLatest(knex);
  if (applied.length) log.info('migrations applied', { applied });
}
