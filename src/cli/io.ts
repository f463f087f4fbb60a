import type { Readable, Writable } from 'node:stream';

/**
 * Where a command reads and writes. A command never touches process.stdout, process.stdin or
 * process.exitCode itself: run alone it gets `processIo()`; run inside `quoting serve` on behalf
 * of another process (the embedded database's control socket) it gets streams that lead back to
 * that process, so the output and exit code are the same either way.
 */
export interface CommandIo {
  stdin: Readable;
  /** `hasColors`: whether the terminal shows colours (a TTY's; the caller's when run inside `quoting serve`). */
  stdout: Writable & { isTTY?: boolean; columns?: number; hasColors?: () => boolean };
  stderr: Writable & { isTTY?: boolean };
  /** Aborted on SIGINT/SIGTERM, or when the calling process goes away. */
  signal: AbortSignal;
}

/** The exit status of a command whose reader went away (`| head -1`): what a shell shows for a SIGPIPE. */
export const CLOSED_OUTPUT_STATUS = 141;

/**
 * The command's own process. The signal handlers are installed only when a command asks for the
 * signal: a command that never looks at it is stopped by Ctrl-C at once, as any program is.
 * A closed stdout or stderr ends the command the same way, quietly.
 */
export function processIo(): CommandIo & { readonly closedOutputStatus: number | undefined } {
  let stop: AbortController | undefined;
  let closedOutputStatus: number | undefined;
  const closed = (which: 'stdout' | 'stderr') => (err: NodeJS.ErrnoException) => {
    if (closedOutputStatus !== undefined) return;
    closedOutputStatus = process.exitCode = err.code === 'EPIPE' ? CLOSED_OUTPUT_STATUS : 1;
    // A full disk or a lost terminal is worth a line where one can still be written; a reader gone is not.
    if (closedOutputStatus === 1 && which === 'stdout') process.stderr.write(`error: cannot write to standard output: ${err.message}\n`);
    // Later writes are dropped: a command finishing up, or copying a served command's output, must not wait
    // for a 'drain' that cannot come.
    for (const stream of [process.stdout, process.stderr]) dropWrites(stream);
    // A command that took the signal stops as on Ctrl-C (closing what it holds); any other ends at once.
    if (stop) stop.abort();
    else process.exit(closedOutputStatus);
  };
  process.stdout.on('error', closed('stdout'));
  process.stderr.on('error', closed('stderr'));
  return {
    stdin: process.stdin,
    stdout: process.stdout,
    stderr: process.stderr,
    get signal() {
      if (!stop) {
        const controller = (stop = new AbortController());
        const abort = () => controller.abort();
        process.once('SIGINT', abort);
        process.once('SIGTERM', abort);
      }
      return stop.signal;
    },
    get closedOutputStatus() {
      return closedOutputStatus;
    },
  };
}

function dropWrites(stream: Writable): void {
  stream.write = ((...args: unknown[]) => {
    const done = args.find((arg) => typeof arg === 'function') as (() => void) | undefined;
    if (done) process.nextTick(done);
    return true;
  }) as Writable['write'];
}

/**
 * Whether a live view (redrawn in place) suits this output: a terminal, and not a CI system's log.
 * CI systems (CI or CONTINUOUS_INTEGRATION set, as the ink library itself checks) keep only a live
 * view's last frame, so there the plain progress lines say more. `env` is the caller's environment (a
 * command run inside `quoting serve` for another process gets that process's); ink itself reads this
 * process's environment, once, so a server running under CI cannot draw a live view for anyone.
 */
export function wantsLiveView(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): boolean {
  return stream.isTTY === true && !inCi(env) && !inCi(process.env);
}

function inCi(env: NodeJS.ProcessEnv): boolean {
  const set = (key: string) => env[key] !== undefined && env[key] !== '0' && env[key] !== 'false';
  return set('CI') || set('CONTINUOUS_INTEGRATION');
}

/** One line to a stream (what console.log did, for any stream). */
export function say(stream: Writable, line = ''): void {
  stream.write(`${line}\n`);
}

/** Everything on a stream, as text (a secret or a file piped in). */
export async function readText(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}
