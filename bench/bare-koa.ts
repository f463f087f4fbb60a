/**
 * The comparison server for me-vs-koa.js: a bare koa app answering every request with the JSON body
 * given in BARE_BODY (serialized per request, as the real app does). Prints its address and runs until
 * SIGTERM. Started by me-vs-koa.js; not meant to be run by hand.
 */
import type { AddressInfo } from 'node:net';
import Koa from 'koa';

const body = JSON.parse(process.env.BARE_BODY ?? '{}') as unknown;
const app = new Koa();
app.use(async (ctx) => {
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
