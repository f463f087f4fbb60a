/**
 * The webhook receiver of webhooks.js: a bare node:http server on loopback that answers every POST with
 * 200 "ok" as soon as its body has arrived, in a process of its own (forked with an IPC channel), so it
 * shares no event loop with the benchmark or the sender. Not meant to be run by hand.
 *
 * IPC, from the benchmark:
 *   {type: 'expect', n}   reset the counters; answer {type: 'done', …} once n distinct events have arrived
 *   {type: 'track', on}   when on, report every delivery as {type: 'hit', email, at} (latency runs)
 *   {type: 'count'}       answer {type: 'count', requests, distinct} (requests since the last 'expect')
 * to the benchmark:
 *   {type: 'listening', url}
 *   {type: 'done', requests, distinct, unsigned, firstAt, lastAt}
 *   {type: 'count', requests, distinct}
 * Times are wall-clock milliseconds with sub-millisecond precision (performance.timeOrigin + performance.now()),
 * comparable with the benchmark's own on the same machine.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';

const now = () => performance.timeOrigin + performance.now();
const send = (message: unknown) => process.send!(message);

let expected = Infinity;
let requests = 0;
let unsigned = 0;
let seen = new Set<string>();
let firstAt = 0;
let lastAt = 0;
let tracking = false;
let reported = false;

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const at = now();
    res.end('ok');
    requests++;
    if (!req.headers['service-signature']) unsigned++;
    seen.add(String(req.headers['service-event-id']));
    if (requests === 1) firstAt = at;
    lastAt = at;
    if (tracking) {
      let email: string | undefined;
      try {
        email = JSON.parse(Buffer.concat(chunks).toString('utf8')).data?.customer?.email;
      } catch {
        email = undefined;
      }
      send({ type: 'hit', email, at });
    }
    if (!reported && seen.size >= expected) {
      reported = true;
      send({ type: 'done', requests, distinct: seen.size, unsigned, firstAt, lastAt });
    }
  });
});
server.keepAliveTimeout = 65_000;

process.on('message', (message: { type: string; n?: number; on?: boolean }) => {
  if (message.type === 'expect') {
    expected = message.n!;
    requests = 0;
    unsigned = 0;
    seen = new Set();
    firstAt = lastAt = 0;
    reported = false;
  } else if (message.type === 'track') {
    tracking = Boolean(message.on);
  } else if (message.type === 'count') {
    send({ type: 'count', requests, distinct: seen.size });
  }
});
process.on('disconnect', () => process.exit(0));
process.once('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  process.exit(0);
});

server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  send({ type: 'listening', url: `http://127.0.0.1:${port}` });
});
