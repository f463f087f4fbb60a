import net from 'node:net';
import test from 'ava';
import { freePort, runCli, scratchPostgres, startServe, usingPostgres } from '../helpers/cli.js';

/**
 * A PostgreSQL 14 cannot be installed here (the distribution ships 15 alone), so this stands in for one on the wire:
 * it signs any client in, says it is 14.11 when asked (`select version()`, `server_version_num`), and records every
 * other statement, answering it with an error. What the tests look at is what the program sent before it gave up.
 */
async function postgres14(): Promise<{ url: string; others: string[]; close: () => Promise<void> }> {
  const others: string[] = [];
  const message = (type: string, body: Buffer) => {
    const head = Buffer.alloc(5);
    head.write(type, 0, 'latin1');
    head.writeInt32BE(body.length + 4, 1);
    return Buffer.concat([head, body]);
  };
  const int32 = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeInt32BE(n);
    return b;
  };
  const int16 = (n: number) => {
    const b = Buffer.alloc(2);
    b.writeInt16BE(n);
    return b;
  };
  const cstring = (s: string) => Buffer.from(`${s}\0`);
  const ready = message('Z', Buffer.from('I'));
  const rows = (columns: [string, number][], values: string[]) =>
    Buffer.concat([
      message('T', Buffer.concat([int16(columns.length), ...columns.map(([name, type]) => Buffer.concat([cstring(name), int32(0), int16(0), int32(type), int16(-1), int32(-1), int16(0)]))])),
      message('D', Buffer.concat([int16(values.length), ...values.map((v) => Buffer.concat([int32(Buffer.byteLength(v)), Buffer.from(v)]))])),
      message('C', cstring('SELECT 1')),
      ready,
    ]);
  const version = 'PostgreSQL 14.11 (Ubuntu 14.11-0ubuntu0.22.04.1) on x86_64-pc-linux-gnu';
  const server = net.createServer((socket) => {
    let buffered = Buffer.alloc(0);
    let started = false;
    socket.on('error', () => undefined);
    socket.on('data', (chunk) => {
      buffered = Buffer.concat([buffered, chunk]);
      for (;;) {
        if (!started) {
          if (buffered.length < 8) return;
          const length = buffered.readInt32BE(0);
          if (buffered.length < length) return;
          const code = buffered.readInt32BE(4);
          buffered = buffered.subarray(length);
          if (code === 80877103) {
            socket.write('N'); // no TLS
            continue;
          }
          started = true;
          socket.write(Buffer.concat([message('R', int32(0)), message('S', Buffer.concat([cstring('server_version'), cstring('14.11')])), message('K', Buffer.concat([int32(1), int32(2)])), ready]));
          continue;
        }
        if (buffered.length < 5) return;
        const type = String.fromCharCode(buffered[0]);
        const length = buffered.readInt32BE(1);
        if (buffered.length < 1 + length) return;
        const body = buffered.subarray(5, 1 + length);
        buffered = buffered.subarray(1 + length);
        const refuse = () => socket.write(Buffer.concat([message('E', Buffer.concat([cstring('SERROR'), cstring('C42601'), cstring('Mthis stand-in answers nothing else'), Buffer.from([0])])), ready]));
        if (type === 'X') return void socket.end();
        if (type === 'P') others.push(body.subarray(body.indexOf(0) + 1, body.indexOf(0, body.indexOf(0) + 1)).toString('utf8')); // Parse: name, then the statement
        if (type === 'S') refuse(); // Sync ends an extended-protocol statement
        if (type !== 'Q') continue;
        const sql = body.toString('utf8').replace(/\0$/, '');
        if (/^select version\(\);?$/i.test(sql.trim())) socket.write(rows([['version', 25]], [version]));
        else if (sql.includes(`current_setting('server_version_num')`)) socket.write(rows([['version', 25], ['num', 23]], [version, '140011']));
        else {
          others.push(sql);
          refuse();
        }
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `postgres://quoting:secret@127.0.0.1:${port}/quoting`,
    others,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const tooOld =
  "error: PostgreSQL 14.11 is older than PostgreSQL 15, which Quoting needs: install PostgreSQL 15 or later (Debian 12 ships 15, Ubuntu 24.04 ships 16; on Ubuntu 22.04 install postgresql-16 from the PostgreSQL project's apt repository), point DATABASE_URL at it, then run 'quoting migrate'";

test('quoting migrate on PostgreSQL 14 asks for its version before anything else, and stops saying what to install', async (t) => {
  const pg = await postgres14();
  t.teardown(pg.close);
  for (const args of [['migrate'], ['migrate', '--status']]) {
    const result = await runCli(args, { env: { DATABASE_URL: pg.url } });
    t.is(result.code, 1, args.join(' '));
    t.deepEqual(result.errorLines, [tooOld], args.join(' '));
  }
  t.deepEqual(pg.others, [], 'no other statement was sent: nothing was created or changed');
});

test('quoting serve --migrate on PostgreSQL 14 stops before migrating, saying what to install', async (t) => {
  const pg = await postgres14();
  t.teardown(pg.close);
  const result = await runCli(['serve', '--migrate', '--port', String(await freePort())], { env: { DATABASE_URL: pg.url } });
  t.is(result.code, 1);
  t.deepEqual(result.errorLines, [tooOld]);
  t.deepEqual(pg.others, []);
});

(usingPostgres ? test : test.skip)(
  `on PostgreSQL 15 or later, migrate and serve --migrate go ahead${usingPostgres ? '' : ' (skipped: needs PostgreSQL, set TEST_DATABASE_URL)'}`,
  async (t) => {
    t.timeout(300_000);
    const url = await scratchPostgres(t, { migrated: false });
    const migrated = await runCli(['migrate'], { env: { DATABASE_URL: url } });
    t.is(migrated.code, 0, migrated.stderr);
    t.regex(migrated.stdout, /^Applied /m);
    const server = await startServe(t, ['--migrate', '--port', String(await freePort())], { env: { DATABASE_URL: url } });
    t.deepEqual(await server.stop(), { code: 0, signal: null });
  },
);
