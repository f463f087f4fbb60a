/**
 * The embedded database's own thread: PGlite is WebAssembly, and a query runs to its end on the thread
 * that calls it. Here it blocks only this thread, while the server's thread keeps answering requests.
 * Requests come from pglite-thread.ts in order and PGlite runs them in that order; one knex connection
 * (knex-pglite's pool of one) keeps each transaction's statements together.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite, type QueryOptions } from '@electric-sql/pglite';
import type { ThreadRequest, ThreadReply, ThreadOptions, WireError } from './pglite-thread.js';

const port = parentPort!;
const options = workerData as ThreadOptions;
const listeners = new Map<number, Promise<() => Promise<void>>>();

const pglite = new PGlite({ dataDir: options.dataDir, ...(options.loadDataDir && { loadDataDir: new Blob([options.loadDataDir]) }) });

/** Every own field of a DatabaseError (code, constraint, detail, …) travels; the class does not. */
function wireError(err: unknown): WireError {
  if (!(err instanceof Error)) return { message: String(err) };
  const fields: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(err)) if (value === undefined || ['string', 'number', 'boolean'].includes(typeof value)) fields[key] = value;
  return { ...fields, name: err.name, message: err.message };
}

async function run(request: ThreadRequest): Promise<{ value: unknown; transfer?: ArrayBuffer[] }> {
  switch (request.op) {
    case 'query':
      return { value: await pglite.query(request.sql, request.params, request.options as QueryOptions | undefined) };
    case 'exec':
      return { value: await pglite.exec(request.sql) };
    case 'listen':
      listeners.set(
        request.listenId,
        pglite.listen(request.channel, (payload) => port.postMessage({ type: 'notify', listenId: request.listenId, payload } satisfies ThreadReply)),
      );
      await listeners.get(request.listenId);
      return { value: null };
    case 'unlisten': {
      const unlisten = listeners.get(request.listenId);
      listeners.delete(request.listenId);
      if (unlisten && !pglite.closed) await (await unlisten)();
      return { value: null };
    }
    case 'dump': {
      const buffer = await (await pglite.dumpDataDir(request.compression)).arrayBuffer();
      return { value: buffer, transfer: [buffer] };
    }
    case 'close':
      if (!pglite.closed) await pglite.close();
      return { value: null };
  }
}

port.on('message', (request: ThreadRequest) => {
  run(request).then(
    ({ value, transfer }) => port.postMessage({ type: 'reply', id: request.id, ok: true, value } satisfies ThreadReply, transfer),
    (err: unknown) => port.postMessage({ type: 'reply', id: request.id, ok: false, error: wireError(err) } satisfies ThreadReply),
  );
});

pglite.waitReady.then(
  () => port.postMessage({ type: 'ready' } satisfies ThreadReply),
  (err: unknown) => port.postMessage({ type: 'failed', error: wireError(err) } satisfies ThreadReply),
);
