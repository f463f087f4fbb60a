/**
 * The transfer floor of lists.js: a bare Node HTTP server that sends a list's body, already built, as the app streams
 * it (chunked, in as many writes as the app has pages, each awaited until the socket drains). Forked with an IPC
 * channel by lists.js; not meant to be run by hand.
 *
 * IPC, from the benchmark: {type: 'load', file, pages} -> {type: 'loaded', bytes} (the body read from `file`, sent
 * in `pages` writes); its first message, {type: 'ready', url}, gives its address.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

let parts: Buffer[] = [];
let bytes = 0;

const server = http.createServer(async (_req, res) => {
  res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8' });
  for (const part of parts) {
    if (!res.write(part)) await new Promise((resolve) => res.once('drain', resolve));
  }
  res.end();
});
server.keepAliveTimeout = 65_000; // as `quoting serve`

process.on('message', (message: { type: string; file: string; pages: number }) => {
  if (message.type !== 'load') return;
  const body = fs.readFileSync(message.file);
  // Equal slices: what costs is the number of writes and their sizes, not where the app's pages end.
  const size = Math.ceil(body.length / message.pages);
  parts = [];
  for (let at = 0; at < body.length; at += size) parts.push(body.subarray(at, Math.min(at + size, body.length)));
  bytes = body.length;
  process.send!({ type: 'loaded', bytes });
});
process.on('disconnect', () => process.exit(0));
process.on('SIGTERM', () => process.exit(0));
server.listen(0, '127.0.0.1', () => process.send!({ type: 'ready', url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }));
