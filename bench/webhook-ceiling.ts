/**
 * The ceiling of webhooks.js: POSTs a list of delivery bodies to the receiver the way DeliveryWorker does
 * (src/webhooks/outbound.ts post() over outboundAgents() keep-alive agents sized to the concurrency, the
 * same headers with a fresh signature per request, the same number of lanes), with no database in the loop.
 * Forked with an IPC channel by webhooks.js; not meant to be run by hand.
 *
 * IPC, from the benchmark:
 *   {type: 'load', url, secret, concurrency, deliveries: [{event_id, event_type, body}]}  -> {type: 'loaded', n}
 *   {type: 'go'}  -> {type: 'done', succeeded, failed, error, elapsedMs}
 */
import { outboundAgents, outboundPolicy, post } from '../src/webhooks/outbound.js';
import { signatureHeader } from '../src/webhooks/signature.js';

interface Delivery {
  event_id: string;
  event_type: string;
  body: string;
}

interface Load {
  url: string;
  secret: string;
  concurrency: number;
  deliveries: Delivery[];
}

const send = (message: unknown) => process.send!(message);
let load: Load | undefined;

async function run({ url, secret, concurrency, deliveries }: Load): Promise<void> {
  const check = outboundPolicy(['127.0.0.0/8']);
  const agents = outboundAgents(check, concurrency);
  let succeeded = 0;
  let failed = 0;
  let error: string | null = null;
  const started = performance.now();
  let next = 0;
  const lanes = Array.from({ length: Math.min(concurrency, deliveries.length) }, async () => {
    while (next < deliveries.length) {
      const delivery = deliveries[next++];
      const timestamp = Math.floor(Date.now() / 1000);
      const result = await post(url, delivery.body, {
        headers: {
          'Content-Type': 'application/json; charset=utf-8',
          'User-Agent': 'Service-Webhooks/1',
          'Service-Signature': signatureHeader([secret], timestamp, delivery.body),
          'Service-Event-Id': delivery.event_id,
          'Service-Event': delivery.event_type,
          'Service-Attempt': '1',
        },
        timeoutMs: 20_000,
        maxBody: 8 * 1024,
        check,
        agents,
      });
      if (result.status !== null && result.status >= 200 && result.status < 300) succeeded++;
      else {
        failed++;
        error ??= result.error ?? `HTTP ${result.status}`;
      }
    }
  });
  await Promise.all(lanes);
  const elapsedMs = performance.now() - started;
  agents.http.destroy();
  agents.https.destroy();
  send({ type: 'done', succeeded, failed, error, elapsedMs });
}

process.on('message', (message: { type: string } & Partial<Load>) => {
  if (message.type === 'load') {
    load = message as Load;
    send({ type: 'loaded', n: load.deliveries.length });
  } else if (message.type === 'go') {
    if (!load) throw new Error('go before load');
    void run(load);
  }
});
process.on('disconnect', () => process.exit(0));
process.on('SIGTERM', () => process.exit(0)); // exits normally, so a --cpu-prof profile is written
send({ type: 'ready' });
