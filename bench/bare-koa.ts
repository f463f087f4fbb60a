/**
 * The comparison server for me-vs-koa.js and quotes.js: a bare koa app answering every request with the JSON
 * body given in BARE_BODY (serialized per request, as the real app does), with status BARE_STATUS (200).
 * With BARE_PARSE=1 it first reads and parses the request body with koa-body, as the real app does for a
 * POST. Prints its address and runs until SIGTERM. Not meant to be run by hand.
 */
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { koaBody } from 'koa-body';

const body = JSON.parse(process.env.BARE_BODY ?? '{}') as unknown;
const status = Number(process.env.BARE_STATUS ?? 200);
const app = new Koa();
if (process.env.BARE_PARSE === '1') app.use(koaBody({ jsonLimit: '2mb' }));
app.use(async (ctx) => {
  ctx.status = status;
  ctx.body = body;
});
const server = app.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  console.log(`bare koa listening on http://127.0.0.1:${port}`);
});
server.keepAliveTimeout = 65_000; // as `quoting serve`
process.once('SIGTERM', () => {
  server.close();
  server.closeIdleConnections();
  process.exit(0);
});
