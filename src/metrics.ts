import { hostname } from 'node:os';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/**
 * What this process counts for GET /metrics (prom-client): its HTTP requests and the tracking events it took. Each
 * series is labelled with the process (`host:pid`), so that scrapes of several servers behind one address add up
 * rather than overwrite each other. Labels are route templates, methods, status classes and outcomes: never a raw
 * path, a workspace, an email or any other tenant data. What every process shares (the webhook queue, imports) is
 * read from the database at scrape time instead (src/ops/metrics.ts).
 */
export const processLabels = { process: `${hostname()}:${process.pid}` };
export const processRegistry = new Registry();
processRegistry.setDefaultLabels(processLabels);

export const httpRequests = new Counter({
  name: 'quoting_http_requests_total',
  help: 'HTTP requests answered, by route template, method and status class.',
  labelNames: ['route', 'method', 'status'] as const,
  registers: [processRegistry],
});

export const httpDuration = new Histogram({
  name: 'quoting_http_request_duration_seconds',
  help: 'Time from a request arriving to its answer being handed to the socket, by route template.',
  labelNames: ['route', 'method'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [processRegistry],
});

export const httpInFlight = new Gauge({
  name: 'quoting_http_requests_in_flight',
  help: 'Requests being handled.',
  registers: [processRegistry],
});

export const trackingEvents = new Counter({
  name: 'quoting_tracking_events_total',
  help: 'Tracking events received by POST /track/event: accepted, or capped (429, over TRACK_RATE_PER_MINUTE).',
  labelNames: ['outcome'] as const,
  registers: [processRegistry],
});
for (const outcome of ['accepted', 'capped']) trackingEvents.inc({ outcome }, 0);

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** A request's method as a label: any other word a client sends is `other`. */
export function methodLabel(method: string): string {
  return METHODS.has(method) ? method : 'other';
}

/** The status class a series is labelled with: `2xx`, `4xx`, ... */
export function statusClass(status: number): string {
  return `${Math.floor(status / 100)}xx`;
}
