import { detectTransactionPooler } from '../../db/pooler.js';
import { UNHEARD_SESSION_CACHE_SECONDS } from '../../auth/session-cache.js';
import { fail, ok, warn, type Check } from './check.js';

/**
 * DATABASE_POOLER against what DATABASE_URL is: a transaction-mode pooler without the setting breaks the worker (named
 * statements) and cross-process eviction (LISTEN); DATABASE_LISTEN_URL must reach PostgreSQL with a session of its own.
 */
export const connectionPooler: Check = {
  id: 'pooler',
  title: 'Connection pooler',
  reads: ['DATABASE_URL', 'DATABASE_POOLER', 'DATABASE_LISTEN_URL'],
  async run(ctx) {
    const { DATABASE_URL: url, DATABASE_POOLER: pooler, DATABASE_LISTEN_URL: listenUrl } = ctx.config;
    if (!url) return ok('the embedded database has no pooler');
    const probe = (target: string) => detectTransactionPooler(target).catch((err: Error) => `unreachable: ${String(err.message).split('\n')[0]}`);
    if (pooler !== 'transaction') {
      const evidence = await probe(url);
      if (evidence?.startsWith('unreachable')) return warn('not checked: the database could not be opened', 'see the Database check');
      if (evidence) {
        return fail(
          `DATABASE_URL goes through a transaction-mode pooler (${evidence}) but DATABASE_POOLER is ${pooler ?? 'unset'}: quoting serve and worker stop`,
          `set DATABASE_POOLER=transaction ${ctx.settingsIn}, and DATABASE_LISTEN_URL to a direct PostgreSQL URL`,
        );
      }
      return ok('DATABASE_URL gives each connection a session of its own');
    }
    if (!listenUrl) {
      return warn(
        `DATABASE_POOLER=transaction without DATABASE_LISTEN_URL: a logout or key change on one server reaches the others within ${UNHEARD_SESSION_CACHE_SECONDS} s, and workers poll every second`,
        `set DATABASE_LISTEN_URL to a direct PostgreSQL URL (not through the pooler) ${ctx.settingsIn}`,
      );
    }
    const evidence = await probe(listenUrl);
    if (evidence?.startsWith('unreachable')) return fail(`DATABASE_LISTEN_URL cannot be reached (${evidence.slice('unreachable: '.length)})`, `check DATABASE_LISTEN_URL ${ctx.settingsIn}`);
    if (evidence) {
      return fail(
        `DATABASE_LISTEN_URL goes through a transaction-mode pooler too (${evidence}): LISTEN hears nothing there`,
        `point DATABASE_LISTEN_URL at PostgreSQL itself (or a session-mode pool) ${ctx.settingsIn}`,
      );
    }
    return ok('DATABASE_POOLER=transaction; LISTEN goes over DATABASE_LISTEN_URL, a connection of its own');
  },
};
