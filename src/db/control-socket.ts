import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';

/**
 * The control socket of the embedded database. PGlite admits one process, so while `quoting serve`
 * holds DATA_DIR, the other `quoting` commands run inside it: the caller connects to
 * DATA_DIR/quoting.sock, sends its command line, and gets the command's output and exit code back.
 *
 * Who may connect: Node cannot read a Unix socket peer's credentials (SO_PEERCRED), so access rests
 * on file permissions, as with PostgreSQL's own socket: the socket is created with mode 0600 (under
 * a umask, so it is never reachable by others, not even for a moment) and only the user running
 * the server can open it. DATA_DIR itself is created with mode 0700.
 * Whom the caller talks to: before sending anything, the caller checks that the socket and DATA_DIR
 * belong to its own user or root and that no other user can write to DATA_DIR (untrustedSocket), so
 * no one else's listener hears a command line. The caller sends no settings: a command run in the
 * server uses the server's configuration; the caller's side is its terminal and, for a file it
 * names (an import), the file's bytes, which it reads itself and streams as the command's stdin.
 *
 * Protocol: frames of a one-byte type, a 4-byte big-endian length and the payload.
 *   caller → server: 'h' header (JSON CommandRequest, first), 'i' stdin bytes, 'e' stdin ended, 'a' abort (Ctrl-C)
 *   server → caller: 'o' stdout bytes, 'r' stderr bytes, 's' send the next stdin chunk, 'x' exit (JSON {code})
 * Stdin is pulled: the caller reads its stdin only once the command asks ('s'), one chunk per
 * request, so a command that never reads leaves the terminal alone and a slow one is not flooded.
 */

const PROTOCOL = 2;
const MAX_FRAME = 16 * 1024 * 1024;

export function controlSocketPath(dataDir: string): string {
  return path.join(path.resolve(dataDir), 'quoting.sock');
}

/** The caller's variables a command run in the server may read: how to show its output, never a setting. */
export const CALLER_VARIABLES = ['CI', 'CONTINUOUS_INTEGRATION', 'LOG_LEVEL'] as const;

export interface CommandRequest {
  /** The command line after `quoting`. */
  argv: string[];
  cwd: string;
  /** The caller's CALLER_VARIABLES that are set (anything else is ignored). */
  env: Record<string, string>;
  /** `colors`: whether the caller's terminal shows colours (its hasColors()). */
  stdout: { isTTY: boolean; columns?: number; colors?: boolean };
  stderr: { isTTY: boolean };
  /** The file argument the caller opened itself and streams as stdin, with its size. */
  input?: { file: string; size: number };
}

/** What the command reads and writes (a CommandIo of the CLI). */
export interface CommandStreams {
  stdin: Readable;
  stdout: Writable & { isTTY?: boolean; columns?: number; hasColors?: () => boolean };
  stderr: Writable & { isTTY?: boolean };
  signal: AbortSignal;
}

function frame(type: string, payload: Buffer | string = ''): Buffer {
  const body = typeof payload === 'string' ? Buffer.from(payload) : payload;
  const head = Buffer.alloc(5);
  head.write(type, 0, 'latin1');
  head.writeUInt32BE(body.length, 1);
  return Buffer.concat([head, body]);
}

/** Calls `onFrame` for each whole frame arriving on the socket; a frame too large ends the connection. */
function readFrames(socket: net.Socket, onFrame: (type: string, payload: Buffer) => void): void {
  let buffered: Buffer = Buffer.alloc(0);
  socket.on('data', (chunk: Buffer) => {
    buffered = buffered.length ? Buffer.concat([buffered, chunk]) : chunk;
    while (buffered.length >= 5) {
      const length = buffered.readUInt32BE(1);
      if (length > MAX_FRAME) return void socket.destroy();
      if (buffered.length < 5 + length) break;
      const type = String.fromCharCode(buffered[0]);
      const payload = buffered.subarray(5, 5 + length);
      buffered = buffered.subarray(5 + length);
      onFrame(type, payload);
    }
  });
}

/**
 * Listens on DATA_DIR/quoting.sock and runs each caller's command with `run`, which returns the exit
 * code. The caller must hold the data-dir lock (any socket file already there is a dead server's).
 * Returns the way to stop: no new callers; commands in flight get up to `graceMs` to finish.
 */
export async function serveCommands(
  dataDir: string,
  run: (request: CommandRequest, streams: CommandStreams) => Promise<number>,
): Promise<(graceMs?: number) => Promise<void>> {
  const socketPath = controlSocketPath(dataDir);
  fs.rmSync(socketPath, { force: true });
  const inFlight = new Set<Promise<void>>();
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    const done = handle(socket, run);
    inFlight.add(done);
    void done.finally(() => inFlight.delete(done));
  });
  // The socket file is created by bind(), synchronously inside listen(): under this umask it is
  // born 0600. Nothing else runs between the two umask calls.
  const umask = process.umask(0o177);
  try {
    server.listen(socketPath);
  } finally {
    process.umask(umask);
  }
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
  fs.chmodSync(socketPath, 0o600);
  return async (graceMs = 10_000) => {
    server.close();
    if (inFlight.size) await Promise.race([Promise.allSettled([...inFlight]), new Promise((resolve) => setTimeout(resolve, graceMs).unref())]);
    for (const socket of sockets) socket.destroy();
    fs.rmSync(socketPath, { force: true });
  };
}

async function handle(socket: net.Socket, run: (request: CommandRequest, streams: CommandStreams) => Promise<number>): Promise<void> {
  const abort = new AbortController();
  socket.on('error', () => undefined); // 'close' follows
  socket.once('close', () => abort.abort());
  const send = (type: string, payload?: Buffer | string, done?: () => void) => {
    if (socket.destroyed || !socket.writable) return void done?.();
    socket.write(frame(type, payload), () => done?.());
  };
  // Output for a caller that has gone away is dropped, so the command still runs to its end.
  const output = <T extends object>(type: string, tty: T) =>
    Object.assign(new Writable({ write: (chunk: Buffer, _encoding, callback) => send(type, chunk, () => callback()) }), tty);
  const stdin = new Readable({ read: () => send('s') });

  const request = await new Promise<CommandRequest | null>((resolve) => {
    let header: CommandRequest | null | undefined;
    socket.once('close', () => resolve(null));
    readFrames(socket, (type, payload) => {
      if (header === undefined) {
        header = parseHeader(type, payload);
        return resolve(header);
      }
      if (type === 'i') stdin.push(payload);
      else if (type === 'e') stdin.push(null);
      else if (type === 'a') abort.abort();
    });
  });
  if (!request) {
    send('r', 'error: the server could not read this command (was it sent by another version of quoting?)\n');
    send('x', JSON.stringify({ code: 1 }), () => socket.end());
    return;
  }
  const streams: CommandStreams = {
    stdin,
    stdout: output('o', { isTTY: request.stdout.isTTY, columns: request.stdout.columns, hasColors: () => request.stdout.colors === true }),
    stderr: output('r', { isTTY: request.stderr.isTTY }),
    signal: abort.signal,
  };
  const code = await run(request, streams).catch(() => 1);
  // Both streams are flushed before the exit code goes out: frames leave in order.
  await Promise.all([new Promise((resolve) => streams.stdout.end(resolve)), new Promise((resolve) => streams.stderr.end(resolve))]);
  send('x', JSON.stringify({ code }), () => socket.end());
}

function parseHeader(type: string, payload: Buffer): CommandRequest | null {
  if (type !== 'h') return null;
  try {
    const header = JSON.parse(payload.toString('utf8')) as CommandRequest & { protocol?: number };
    if (header.protocol !== PROTOCOL || !Array.isArray(header.argv) || typeof header.cwd !== 'string' || typeof header.env !== 'object' || !header.env) return null;
    if (header.input !== undefined && (typeof header.input?.file !== 'string' || typeof header.input.size !== 'number')) return null;
    const env: Record<string, string> = {};
    for (const key of CALLER_VARIABLES) if (typeof header.env[key] === 'string') env[key] = header.env[key];
    return { ...header, env };
  } catch {
    return null;
  }
}

/**
 * Why the socket in `dataDir` must not be sent a command, or undefined when it may be (or when there is no
 * socket to talk to). A command line may carry a password, and whoever can write to DATA_DIR can put a
 * listener of their own in the server's place: so the socket and DATA_DIR must belong to this user or to
 * root, and no other user may write to DATA_DIR. A symbolic link is never followed.
 */
export function untrustedSocket(dataDir: string): string | undefined {
  const socketPath = controlSocketPath(dataDir);
  const me = process.getuid?.();
  let socket: fs.Stats;
  try {
    socket = fs.lstatSync(socketPath);
  } catch {
    return undefined; // nothing there: the command runs here
  }
  if (me === undefined) return undefined; // no Unix users to check (Windows)
  const refuse = (reason: string, fix: string) => `refusing to send this command to ${socketPath}: ${reason}; ${fix}`;
  const asOwner = 'run it as the user that runs quoting serve';
  if (socket.isSymbolicLink()) return refuse('it is a symbolic link, not the server\'s socket', 'stop whatever put it there, remove it and restart quoting serve');
  const dir = path.dirname(socketPath);
  const folder = fs.statSync(dir);
  if (folder.uid !== me && folder.uid !== 0) return refuse(`${dir} belongs to uid ${folder.uid}, not to this user (uid ${me}) or root`, asOwner);
  if (folder.mode & 0o022) {
    const mode = (folder.mode & 0o7777).toString(8).padStart(4, '0');
    return refuse(`other users can write to ${dir} (mode ${mode}), so the socket may not be the server's`, `make it private (chmod 700 ${dir}) and restart quoting serve`);
  }
  if (socket.uid !== me && socket.uid !== 0) return refuse(`it belongs to uid ${socket.uid}, not to this user (uid ${me}) or root`, asOwner);
  return undefined;
}

/**
 * Runs a command in the server that holds `dataDir`, with this process's streams; resolves to its
 * exit code, or null when no server answers on the socket (none there, or a dead one's file).
 * Rejects, sending nothing, when the socket cannot be trusted (untrustedSocket).
 * An abort of `local.signal` (Ctrl-C) is passed on to the command.
 */
export function sendCommand(
  dataDir: string,
  request: CommandRequest,
  local: { stdin: Readable; stdout: Writable; stderr: Writable; signal: AbortSignal },
): Promise<number | null> {
  const refusal = untrustedSocket(dataDir);
  if (refusal) return Promise.reject(new Error(refusal));
  return new Promise((resolve, reject) => {
    const socket = net.connect(controlSocketPath(dataDir));
    let connected = false;
    let code: number | undefined;
    let readingStdin = false;
    const send = (type: string, payload?: Buffer | string) => {
      if (!socket.destroyed) socket.write(frame(type, payload));
    };
    const onStdin = (chunk: Buffer | string) => {
      send('i', typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
      local.stdin.pause(); // until the command asks for more
    };
    const onStdinEnd = () => send('e');
    const onAbort = () => send('a');

    socket.once('connect', () => {
      connected = true;
      send('h', JSON.stringify({ protocol: PROTOCOL, ...request }));
      local.signal.addEventListener('abort', onAbort, { once: true });
    });
    socket.on('error', (err: NodeJS.ErrnoException) => {
      if (!connected) {
        socket.destroy();
        // No socket, a dead server's file, not a socket at all, not ours, or a path too long for a socket
        // (the server then could not listen either): the command runs here and the lock says who holds it.
        if (['ENOENT', 'ECONNREFUSED', 'ENOTSOCK', 'EACCES', 'EPERM', 'ENAMETOOLONG', 'EINVAL'].includes(err.code ?? '')) resolve(null);
        else reject(err);
      }
    });
    readFrames(socket, (type, payload) => {
      if (type === 'o' || type === 'r') {
        const target = type === 'o' ? local.stdout : local.stderr;
        // A slow terminal or pipe holds the server back instead of filling this process's memory.
        if (!target.write(payload)) {
          socket.pause();
          target.once('drain', () => socket.resume());
        }
      } else if (type === 's') {
        if (!readingStdin) {
          readingStdin = true;
          local.stdin.on('data', onStdin);
          local.stdin.once('end', onStdinEnd);
          local.stdin.once('error', onStdinEnd);
        }
        local.stdin.resume();
      } else if (type === 'x') {
        code = (JSON.parse(payload.toString('utf8')) as { code: number }).code;
      }
    });
    socket.once('close', () => {
      local.signal.removeEventListener('abort', onAbort);
      if (readingStdin) {
        local.stdin.off('data', onStdin);
        local.stdin.off('end', onStdinEnd);
        local.stdin.off('error', onStdinEnd);
        // Reading it keeps the process alive; the command is over.
        local.stdin.destroy();
      }
      if (!connected) return;
      if (code === undefined) reject(new Error('the server stopped before the command finished; run it again'));
      else resolve(code);
    });
  });
}
