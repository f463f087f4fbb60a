import { setLogLevel, type LogLevel } from '../../src/log.js';

/** Runs `fn` while capturing the app's log lines (JSON, level `error` and up unless told), then restores silence. */
export async function captureLogs<T>(fn: () => Promise<T>, level: Exclude<LogLevel, 'silent'> = 'error'): Promise<{ result: T; logs: Record<string, any>[] }> {
  const lines: string[] = [];
  const write = process.stderr.write.bind(process.stderr);
  setLogLevel(level);
  process.stderr.write = ((chunk: string) => {
    lines.push(String(chunk));
    return true;
  }) as typeof process.stderr.write;
  try {
    const result = await fn();
    return { result, logs: lines.map((line) => JSON.parse(line)) };
  } finally {
    process.stderr.write = write;
    setLogLevel('silent');
  }
}
