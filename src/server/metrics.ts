import type { Context, Middleware, Next } from 'koa';
import type { Knex } from 'knex';
import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import { safeEqual } from '../crypto.js';
import { MethodNotAllowed, Unauthorized } from '../errors.js';
import { processLabels, processRegistry } from '../metrics.js';
import { InstallationMetrics } from '../ops/metrics.js';
import { allowedMethods } from '../http/api.js';

let defaultsCollected = false;

/**
 * GET /metrics in the Prometheus text format, for `Authorization: Bearer <METRICS_TOKEN>` (compared in constant
 * time; otherwise 401). Without METRICS_TOKEN the app has no such middleware and /metrics is the 404 of any
 * unknown path. The text: this process's figures (src/metrics.ts, its pool, node's default metrics, event-loop
 * lag among them), then the installation's, read from the database (src/ops/metrics.ts).
 */
export function metricsEndpoint(db: Knex, token: string): Middleware {
  if (!defaultsCollected) {
    collectDefaultMetrics({ register: processRegistry, prefix: 'quoting_' });
    // Gauges named like counters, which promtool's lint refuses; the same figures stay, by type, without the suffix.
    for (const name of ['active_handles_total', 'active_requests_total', 'active_resources_total']) processRegistry.removeSingleMetric(`quoting_nodejs_${name}`);
    defaultsCollected = true;
  }
  const installation = new InstallationMetrics(db);
  const pool = poolMetrics(db);
  const expected = `Bearer ${token}`;
  return async (ctx: Context, next: Next) => {
    if (ctx.path !== '/metrics') return next();
    ctx.state.route = '/metrics';
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') throw new MethodNotAllowed(ctx.method, ctx.path, allowedMethods(['GET']));
    if (!safeEqual(ctx.get('authorization'), expected)) {
      ctx.set('WWW-Authenticate', 'Bearer realm="metrics"');
      throw new Unauthorized('GET /metrics needs Authorization: Bearer <METRICS_TOKEN>.');
    }
    const parts = await Promise.all([processRegistry.metrics(), pool.metrics(), installation.text()]);
    ctx.set('Cache-Control', 'no-store');
    ctx.type = processRegistry.contentType;
    ctx.body = parts.join('\n');
  };
}

/** The database pool of this process: connections in use and acquisitions waiting for one. */
function poolMetrics(db: Knex): Registry {
  const registry = new Registry();
  registry.setDefaultLabels(processLabels);
  const pool = (db.client as { pool?: { numUsed(): number; numPendingAcquires(): number } }).pool;
  new Gauge({
    name: 'quoting_db_pool_connections_in_use',
    help: 'Database connections this process holds for a statement or a transaction.',
    registers: [registry],
    collect() {
      this.set(pool?.numUsed() ?? 0);
    },
  });
  new Gauge({
    name: 'quoting_db_pool_acquires_waiting',
    help: 'Statements of this process waiting for a database connection.',
    registers: [registry],
    collect() {
      this.set(pool?.numPendingAcquires() ?? 0);
    },
  });
  return registry;
}

