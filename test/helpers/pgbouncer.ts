import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

/** Debian's pgbouncer (apt-get install pgbouncer; .ci/run installs it). */
export const pgbouncerBinary = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'].find((file) => fs.existsSync(file));

export interface Pgbouncer {
  /** `databaseUrl` (a PostgreSQL URL) with its host and port replaced by the pooler's. */
  through(databaseUrl: string): string;
  /** The pooler's admin console (SHOW POOLS, SHOW SERVERS). */
  adminUrl: string;
  /** Its process id (a benchmark reads its CPU time). */
  pid: number | undefined;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
    server.once('error', reject);
  });
}

/**
 * A PgBouncer of this process's own, in transaction mode, in front of the PostgreSQL of `databaseUrl` (every database on
 * it, as the URL's user, trust auth): a config file in a temporary directory, run in the foreground (no systemd). As
 * root it drops to the postgres user (it refuses to run as root). Stopped with the process if not before.
 */
export async function startPgbouncer(databaseUrl: string, options: { poolSize?: number } = {}): Promise<Pgbouncer> {
  if (!pgbouncerBinary) throw new Error('pgbouncer is not installed');
  const target = new URL(databaseUrl);
  const user = decodeURIComponent(target.username || 'postgres');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quoting-pgbouncer-'));
  fs.chmodSync(dir, 0o755);
  const port = await freePort();
  fs.writeFileSync(path.join(dir, 'users.txt'), `"${user}" ""\n`);
  fs.writeFileSync(
    path.join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = host=${target.hostname} port=${target.port || 5432}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${path.join(dir, 'users.txt')}`,
      `admin_users = ${user}`,
      'pool_mode = transaction',
      `default_pool_size = ${options.poolSize ?? 20}`,
      'max_client_conn = 500',
      'log_connections = 0',
      'log_disconnections = 0',
      ...(process.getuid?.() === 0 ? ['user = postgres'] : []),
      '',
    ].join('\n'),
  );
  const child: ChildProcess = spawn(pgbouncerBinary, [path.join(dir, 'pgbouncer.ini')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk) => (stderr = (stderr + chunk).slice(-4000)));
  // It keeps no test process alive: it is stopped when the process exits, if not before.
  child.unref();
  (child.stderr as unknown as { unref(): void }).unref();
  const kill = () => child.kill('SIGINT');
  process.once('exit', kill);
  const through = (url: string) => {
    const parsed = new URL(url);
    parsed.hostname = '127.0.0.1';
    parsed.port = String(port);
    return parsed.toString();
  };
  // Up once it accepts connections.
  for (let attempt = 0; ; attempt++) {
    if (child.exitCode !== null) throw new Error(`pgbouncer exited: ${stderr.trim().split('\n').pop()}`);
    const up = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => (socket.end(), resolve(true)));
      socket.once('error', () => resolve(false));
    });
    if (up) break;
    if (attempt > 100) throw new Error(`pgbouncer did not listen: ${stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    through,
    pid: child.pid,
    adminUrl: through(Object.assign(new URL(databaseUrl), { pathname: '/pgbouncer' }).toString()),
    stop: async () => {
      process.removeListener('exit', kill);
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.ref(); // waited for now
        kill();
        await exited;
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
