/**
 * The list fetcher of embedded.js, in a process of its own. In the benchmark's process, receiving a 50 MB body
 * (undici joins its chunks in one synchronous copy) and collecting it blocked the event loop for up to a few hundred
 * milliseconds, and the /healthz samples timed in that loop counted the client's stalls as the server's. Forked with
 * an IPC channel by embedded.js; not meant to be run by hand.
 *
 * IPC, from the benchmark: {type: 'start', url, cookie, lists, minBytes} → the lists fetched in turn, each body
 * received whole and uncompressed, at least one, until {type: 'stop'} → {type: 'stopped', fetched} (or
 * {type: 'failed', error} at the first failure). Its first message is {type: 'ready'}.
 */
interface Start {
  type: 'start';
  url: string;
  cookie: string;
  lists: string[];
  minBytes: number;
}

let stop = false;

async function fetchLists({ url, cookie, lists, minBytes }: Start): Promise<number> {
  let fetched = 0;
  do {
    const list = lists[fetched % lists.length];
    const res = await fetch(`${url}/api/v1/${list}`, { headers: { cookie, 'accept-encoding': 'identity' } });
    const body = await res.arrayBuffer();
    if (res.status !== 200 || body.byteLength < minBytes) throw new Error(`GET /api/v1/${list}: ${res.status}, ${body.byteLength} bytes`);
    fetched++;
  } while (!stop);
  return fetched;
}

process.on('message', (message: Start | { type: 'stop' }) => {
  if (message.type === 'stop') stop = true;
  else {
    stop = false;
    fetchLists(message).then(
      (fetched) => process.send!({ type: 'stopped', fetched }),
      (err: Error) => process.send!({ type: 'failed', error: err.message }),
    );
  }
});
process.on('disconnect', () => process.exit(0));
process.on('SIGTERM', () => process.exit(0));
process.send!({ type: 'ready' });
