import { AsyncLocalStorage } from 'node:async_hooks';

const levels = { debug: 10, info: 20, warn: 30, error: 40, silent: 99 } as const;
export type LogLevel = keyof typeof levels;

let threshold: number = levels.info;

export function setLogLevel(level: LogLevel): void {
  threshold = levels[level];
}

/** The request a line is written for: its id (X-Request-Id) and, once routed, its route template. */
export interface RequestLogContext {
  request_id: string;
  route(): string | null;
}

const requestContext = new AsyncLocalStorage<RequestLogContext>();

/**
 * Runs `fn` (a request's handling) so that every line written meanwhile, in any module, carries the request's id
 * and route template (null before the request is routed, or when no route answered it).
 */
export function withRequestLog<T>(context: RequestLogContext, fn: () => T): T {
  return requestContext.run(context, fn);
}

/** One JSON line per entry on stderr. Callers never pass secrets: no bodies, headers or query strings. */
function write(level: Exclude<LogLevel, 'silent'>, msg: string, fields: Record<string, unknown> = {}): void {
  if (levels[level] < threshold) return;
  const request = requestContext.getStore();
  const line = request ? { time: new Date().toISOString(), level, msg, request_id: request.request_id, route: request.route(), ...fields } : { time: new Date().toISOString(), level, msg, ...fields };
  process.stderr.write(JSON.stringify(line) + '\n');
}

/** Whether entries of this level are written; lets a hot path skip building them. */
export function logs(level: Exclude<LogLevel, 'silent'>): boolean {
  return levels[level] >= threshold;
}

export const log = {
  debug: (msg: string, fields?: Record<string, unknown>) => write('debug', msg, fields),
  info: (msg: string, fields?: Record<string, unknown>) => write('info', msg, fields),
  warn: (msg: string, fields?: Record<string, unknown>) => write('warn', msg, fields),
  error: (msg: string, fields?: Record<string, unknown>) => write('error', msg, fields),
};

export function errorFields(err: unknown): Record<string, unknown> {
  if (err instanceof Error) return { error: err.message, stack: err.stack };
  return { error: String(err) };
}
