import type { Context, Next } from 'koa';

/**
 * Counts the requests being handled, whether or not their client is still there, so that a stop can wait for
 * them before the database goes away. Closing the server waits for connections only: a request whose client
 * left (a timeout, a load balancer's retry) goes on being handled, and one still waiting for a pooled
 * connection when the pool closed failed as a 500 in the log, its work undone.
 */
export class InFlight {
  private count = 0;
  private waiters: (() => void)[] = [];

  readonly middleware = async (_ctx: Context, next: Next): Promise<void> => {
    this.count++;
    try {
      await next();
    } finally {
      if (--this.count === 0) for (const wake of this.waiters.splice(0)) wake();
    }
  };

  /** Resolves once no request is being handled. */
  drained(): Promise<void> {
    return this.count === 0 ? Promise.resolve() : new Promise((resolve) => this.waiters.push(resolve));
  }
}
