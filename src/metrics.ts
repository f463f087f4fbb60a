import { hostname } from 'node:os';
import { Counter, Registry } from 'prom-client';

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

/** prom-client's shape of a metric's figures (what a Registry writes out). */
interface Figures {
  name: string;
  help: string;
  type: 'counter' | 'gauge' | 'histogram';
  aggregator: 'sum';
  values: { value: number; labels: Record<string, string | number>; metricName?: string }[];
}

const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

interface RequestSeries {
  labels: { route: string; method: string; status: string };
  count: number;
}

interface DurationSeries {
  labels: { route: string; method: string };
  /** Observations in each bucket alone (not cumulative), the last past the largest bound. */
  buckets: number[];
  sum: number;
  count: number;
}

/**
 * This process's HTTP figures: requests by route template, method and status class, their durations, and those in
 * flight. A request adds to plain numbers (a prom-client counter and histogram cost several microseconds a request
 * in a real server, measured by bench/metrics.ts); a scrape writes them out through the registry as prom-client's own
 * metrics would be.
 */
export class HttpFigures {
  inFlight = 0;
  private readonly requests = new Map<string, RequestSeries>();
  private readonly durations = new Map<string, DurationSeries>();

  record(route: string, rawMethod: string, status: number, seconds: number): void {
    // Keyed by the labels themselves, so methods outside the list (all `other`) share one series.
    const method = methodLabel(rawMethod);
    const statusLabel = statusClass(status);
    const key = `${method} ${statusLabel} ${route}`;
    let requests = this.requests.get(key);
    if (!requests) {
      requests = { labels: { route, method, status: statusLabel }, count: 0 };
      this.requests.set(key, requests);
    }
    requests.count++;
    const timingKey = `${method} ${route}`;
    let durations = this.durations.get(timingKey);
    if (!durations) {
      durations = { labels: { route, method }, buckets: new Array(DURATION_BUCKETS.length + 1).fill(0), sum: 0, count: 0 };
      this.durations.set(timingKey, durations);
    }
    let bucket = 0;
    while (bucket < DURATION_BUCKETS.length && seconds > DURATION_BUCKETS[bucket]) bucket++;
    durations.buckets[bucket]++;
    durations.sum += seconds;
    durations.count++;
  }

  /** The three metrics, registered in `registry`. */
  register(registry: Registry): void {
    const metrics: { name: string; get(): Figures }[] = [
      {
        name: 'quoting_http_requests_total',
        get: () => ({
          name: 'quoting_http_requests_total', help: 'HTTP requests answered, by route template, method and status class.', type: 'counter', aggregator: 'sum',
          values: [...this.requests.values()].map((r) => ({ value: r.count, labels: r.labels })),
        }),
      },
      {
        name: 'quoting_http_request_duration_seconds',
        get: () => {
          const name = 'quoting_http_request_duration_seconds';
          const values: Figures['values'] = [];
          for (const d of this.durations.values()) {
            let cumulative = 0;
            DURATION_BUCKETS.forEach((le, i) => {
              cumulative += d.buckets[i];
              values.push({ metricName: `${name}_bucket`, value: cumulative, labels: { ...d.labels, le } });
            });
            values.push({ metricName: `${name}_bucket`, value: d.count, labels: { ...d.labels, le: '+Inf' } });
            values.push({ metricName: `${name}_sum`, value: d.sum, labels: d.labels });
            values.push({ metricName: `${name}_count`, value: d.count, labels: d.labels });
          }
          return { name, help: 'Time from a request arriving to its answer being handed to the socket, by route template.', type: 'histogram', aggregator: 'sum', values };
        },
      },
      {
        name: 'quoting_http_requests_in_flight',
        get: () => ({ name: 'quoting_http_requests_in_flight', help: 'Requests being handled.', type: 'gauge', aggregator: 'sum', values: [{ value: this.inFlight, labels: {} }] }),
      },
    ];
    for (const metric of metrics) registry.registerMetric(metric as unknown as Parameters<Registry['registerMetric']>[0]);
  }
}

export const httpFigures = new HttpFigures();
httpFigures.register(processRegistry);

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
