/** An error a client can act on: its status and message reach the client as they stand. */
export class HttpError extends Error {
  constructor(
    public readonly status: number,
    message: string,
    public readonly data?: Record<string, unknown>,
  ) {
    super(message);
  }
}

export class BadRequest extends HttpError {
  constructor(message: string) {
    super(400, message);
  }
}

export class Unauthorized extends HttpError {
  constructor(message = 'Not authenticated.') {
    super(401, message);
  }
}

export class PaymentRequired extends HttpError {
  constructor(message: string) {
    super(402, message);
  }
}

export class Forbidden extends HttpError {
  constructor(message = 'Not permitted.') {
    super(403, message);
  }
}

export class NotFound extends HttpError {
  constructor(message = 'Not found.') {
    super(404, message);
  }
}

/** A path that exists, asked with a method it does not take: 405, with the methods it takes in the Allow header. */
export class MethodNotAllowed extends HttpError {
  constructor(
    method: string,
    path: string,
    public readonly allow: string[],
  ) {
    super(405, `${method} is not allowed on ${path}; it takes ${allow.join(', ')}.`);
  }
}

export class Conflict extends HttpError {
  constructor(message: string, data?: Record<string, unknown>) {
    super(409, message, data);
  }
}

export class Gone extends HttpError {
  constructor(message: string) {
    super(410, message);
  }
}

export class Validation extends HttpError {
  constructor(
    public readonly field: string,
    message: string,
  ) {
    super(422, message);
  }
}

export class TooManyRequests extends HttpError {
  constructor(message: string) {
    super(429, message);
  }
}

export class Unavailable extends HttpError {
  constructor(message: string) {
    super(503, message);
  }
}

const connectionErrorCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'ETIMEDOUT', 'EHOSTUNREACH', 'EPIPE', '57P01', '57P02', '57P03', '53300']);

/** True when the error says the database cannot be reached (as opposed to a bad query). */
export function isDatabaseUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: string }).code;
  if (code && (connectionErrorCodes.has(code) || code.startsWith('08'))) return true;
  if (err.name === 'KnexTimeoutError') return true;
  // pg refuses every statement on a client whose connection broke ("... and is not queryable"), with no code;
  // knex prefixes the statement, e.g. "COMMIT; - Client has encountered a connection error and is not queryable".
  if (/PGlite is closed|Connection terminated|connect ECONNREFUSED|database system is (starting|shutting) up|Client has encountered a connection error|Client was closed and is not queryable/i.test(err.message)) return true;
  const cause = (err as { cause?: unknown }).cause;
  return cause !== undefined && cause !== err && isDatabaseUnavailable(cause);
}
