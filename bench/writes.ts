/**
 * A write that emits an event, as a client makes it: req/s and p50 of `PATCH /api/v1/customers/{id}` (`--write
 * customer`, the default: one `customer.updated` each) or `PATCH /api/v1/quotes/{id}/lines/{line_id}` (`--write line`:
 * a draft's line changed, its totals, activity and `quote.line_updated`), each event with its delivery queued for the
 * workspace's one subscription, with autocannon at `--connections` (10), on PostgreSQL. With `--baseline-bin <another checkout>/bin/quoting` that build serves the
 * same database on a port of its own, and the two take turns (baseline, this build, …) over `--rounds` (3) of
 * `--duration` (5) s, each after `--warmup` (2) s discarded; the ratio of the medians and of each round. Afterwards
 * every answered write is checked to have left its event, and every event exactly one delivery.
 *   node dist/bench/writes.js [--write customer|line] [--baseline-bin ../other/bin/quoting] [--connections 10] [--rounds 3] [--duration 5]
 */
import path from 'node:path';
import autocannon from 'autocannon';
import { openDatabase } from '../src/db/database.js';
import { benchArgs, freshPostgresUrl, median, note, onCleanup, printTable, spread, runBench, signUp, startQuoting } from './lib.js';

const { values } = benchArgs('writes.js', {
  write: { type: 'string', default: 'customer' },
  'baseline-bin': { type: 'string' },
  connections: { type: 'string', default: '10' },
  rounds: { type: 'string', default: '3' },
  duration: { type: 'string', default: '5' },
  warmup: { type: 'string', default: '2' },
});
if (values.write !== 'customer' && values.write !== 'line') throw new Error(`--write: customer or line, not ${values.write}`);
const connections = Number(values.connections);
const rounds = Math.max(1, Number(values.rounds));

async function post(url: string, cookie: string, body: unknown): Promise<any> {
  const res = await fetch(url, { method: 'POST', headers: { cookie, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await res.text();
  if (res.status !== 201) throw new Error(`POST ${url}: ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text).data;
}

runBench(async () => {
  const url = await freshPostgresUrl();
  const builds = [
    ...(values['baseline-bin'] ? [{ build: 'baseline', server: await startQuoting(url, {}, path.resolve(values['baseline-bin'])) }] : []),
    { build: 'this build', server: await startQuoting(url) },
  ];
  const { cookie } = await signUp(builds[0].server.url);
  // Never reached (nothing delivers here: no worker runs); it makes every event queue a delivery, as in production.
  await post(`${builds[0].server.url}/api/v1/webhooks`, cookie, { url: 'http://127.0.0.1:9/hook', event_types: ['*'] });
  const { customer } = await post(`${builds[0].server.url}/api/v1/customers`, cookie, { email: 'writes@example.com', name: 'Writes' });
  const write =
    values.write === 'customer'
      ? { path: `/api/v1/customers/${customer.id}`, body: { name: 'Writes, renamed' }, event: 'customer.updated' }
      : await (async () => {
          const { quote, lines } = await post(`${builds[0].server.url}/api/v1/quotes`, cookie, {
            customer_id: customer.id, tax_rate: '19', lines: [{ description: 'Installation', quantity: '1', price: '39.90' }, { description: 'Travel', price: '25.00' }],
          });
          return { path: `/api/v1/quotes/${quote.id}/lines/${lines[0].id}`, body: { quantity: '2' }, event: 'quote.line_updated' };
        })();
  let answered = 0;
  const fire = async (base: string, seconds: number) => {
    const result = await autocannon({
      url: `${base}${write.path}`, method: 'PATCH', connections, duration: seconds,
      headers: { cookie, 'content-type': 'application/json' }, body: JSON.stringify(write.body),
    });
    if (result.errors || result.non2xx) throw new Error(`${result.errors} connection errors, ${result.non2xx} non-2xx answers in ${result.requests.total} requests`);
    answered += result.requests.total;
    return { rate: result.requests.total / result.duration, p50: result.latency.p50 };
  };
  const measured = new Map<string, { rate: number; p50: number }[]>(builds.map(({ build }) => [build, []]));
  for (const { server } of builds) await fire(server.url, Number(values.warmup));
  for (let round = 0; round < rounds; round++) {
    for (const { build, server } of builds) {
      const m = await fire(server.url, Number(values.duration));
      measured.get(build)!.push(m);
      note(`round ${round + 1} ${build}: ${m.rate.toFixed(1)} req/s, p50 ${m.p50} ms`);
    }
  }
  const db = await openDatabase({ databaseUrl: url, dataDir: '' });
  onCleanup(() => db.close());
  // autocannon stops counting at the end of a round with requests still in flight: let them finish, then count.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const [{ events, undelivered }] = (
    await db.knex.raw(
      `/* all workspaces: the bench reads its own rows */ select count(*)::int as events, count(*) filter (where n <> 1)::int as undelivered
         from (select e.id, (select count(*) from webhook_deliveries d where d.event_id = e.id) as n from events e where e.type = ?) x`,
      [write.event],
    )
  ).rows;
  if (events < answered || undelivered) throw new Error(`${answered} writes answered, but ${events} events written, ${undelivered} of them without exactly one delivery`);
  const baseline = measured.get('baseline');
  const ours = measured.get('this build')!;
  printTable(`PATCH ${write.path.replace(/\/\d+/g, '/{id}')} (one event and one delivery each) at ${connections} connections, PostgreSQL: ${rounds} alternating rounds of ${values.duration} s; req/s min / median / max`, [
    ['build', 'req/s', 'p50 (median round)', 'this build / baseline (medians)', 'per round, min / median / max'],
    ...builds.map(({ build }) => {
      const ms = measured.get(build)!;
      const rates = ms.map((m) => m.rate);
      const ratio = baseline && build !== 'baseline' ? (median(rates) / median(baseline.map((m) => m.rate))).toFixed(2) : '';
      const perRound = baseline && build !== 'baseline' ? spread(ours.map((m, i) => m.rate / baseline[i].rate), 2) : '';
      return [build, spread(rates, 1), `${median(ms.map((m) => m.p50))} ms`, ratio, perRound];
    }),
  ]);
  note(`\n${answered} writes answered; ${events} events written (the answered ones and those still in flight when a round ended), each with one delivery.`);
});
