import fs from 'node:fs';
import path from 'node:path';
import knexFactory from 'knex';
import { Client, ok } from '../helpers/client.js';
import { freePort, migratedDataDir, runCli, scratchPostgres, startServe, tempDir } from '../helpers/cli.js';
import { postgresTest } from '../helpers/skip.js';

// From the embedded default to PostgreSQL: `DATABASE_URL=… quoting restore FILE` with a backup of the embedded database.

const owner = { email: 'olive@move.test', password: 'owner password 1' };
const numberOf = (quote: { quote_number: string }) => Number(quote.quote_number.slice(-6));

postgresTest(
  'data made on the embedded database is served from PostgreSQL after a restore; ids, quote numbers and keys carry on',
  async (t) => {
    t.timeout(900_000);
    const embedded = { DATA_DIR: await migratedDataDir(t) };
    let server = await startServe(t, ['--port', String(await freePort())], { env: embedded });
    const created = await runCli(['workspace', 'create', '--name', 'Moving Co', '--slug', 'moving', '--owner-email', owner.email, '--owner-name', 'Olive', '--password', owner.password], { env: embedded });
    t.is(created.code, 0, created.stderr);
    const secretKey = /^Secret key: (sk_live_\S+)/m.exec(created.stdout)![1];
    const publicKey = /^Public key: (pk_live_\S+)/m.exec(created.stdout)![1];
    let client = new Client(server.url);
    t.is((await client.post('/api/v1/auth/login', owner)).status, 200);
    const customer = (await ok(client.post('/api/v1/customers', { email: 'kept@customer.test', name: 'Kept Customer', notes: 'Line one\nline two' }), 201)).customer;
    const quotes = [];
    for (const price of ['10.50', '1234.567']) {
      quotes.push((await ok(client.post('/api/v1/quotes', { customer_id: customer.id, lines: [{ description: `Work at ${price}`, quantity: '1.5', price: Number(price).toFixed(2) }] }), 201)).quote);
    }
    const before = {
      customer: (await ok(client.get(`/api/v1/customers/${customer.id}`))).customer,
      quote: (await ok(client.get(`/api/v1/quotes/${quotes[1].id}`))).quote,
      quotes: (await ok(client.get('/api/v1/quotes'))).quotes,
    };
    // The backup is taken while the server runs (through its socket), as an operator would.
    const file = path.join(tempDir(t), 'embedded.backup');
    const backup = await runCli(['backup', '--out', file], { env: embedded, timeoutMs: 180_000 });
    t.is(backup.code, 0, backup.stderr);
    t.deepEqual(await server.stop(), { code: 0, signal: null });

    const postgres = { DATABASE_URL: await scratchPostgres(t, { migrated: false }) };
    const restored = await runCli(['restore', file], { env: postgres, timeoutMs: 300_000 });
    t.is(restored.code, 0, restored.stderr);
    t.regex(restored.stdout, /^Restored .*embedded\.backup \(a backup of the embedded database\) into PostgreSQL at 127\.0\.0\.1:5432\/quoting_cli_\w+: \d+ rows in \d+ tables; new ids and quote numbers follow on from it\.\n$/);

    server = await startServe(t, ['--port', String(await freePort())], { env: postgres });
    client = new Client(server.url);
    const login = await client.post('/api/v1/auth/login', owner);
    t.is(login.status, 200, login.text);
    // The same records, to the byte: texts with line breaks, decimals, timestamps to the microsecond.
    t.deepEqual((await ok(client.get(`/api/v1/customers/${customer.id}`))).customer, before.customer);
    t.deepEqual((await ok(client.get(`/api/v1/quotes/${quotes[1].id}`))).quote, before.quote);
    t.deepEqual((await ok(client.get('/api/v1/quotes'))).quotes, before.quotes);
    // The workspace's keys work as they did.
    for (const [authorization, type] of [[`Bearer ${secretKey}`, 'secret'], [`Public ${publicKey}`, 'public']]) {
      const byKey = await new Client(server.url).get('/api/v1/auth/key', { headers: { authorization } });
      t.is(byKey.status, 200, byKey.text);
      t.like(byKey.body.data, { key_type: type, workspace: { slug: 'moving' } });
    }

    // New records follow on: the next quote number, ids past the old ones (no collision).
    const next = (await ok(client.post('/api/v1/quotes', { customer_id: customer.id, lines: [{ description: 'After the move', price: '5.00' }] }), 201)).quote;
    t.is(numberOf(next), numberOf(quotes[1]) + 1);
    t.true(next.id > quotes[1].id);
    const another = (await ok(client.post('/api/v1/customers', { email: 'new@customer.test', name: 'New Customer' }), 201)).customer;
    t.true(another.id > customer.id);
    const added = await runCli(['user', 'add', '--workspace', 'moving', '--email', 'mia@move.test'], { env: postgres });
    t.is(added.code, 0, added.stderr);
    const listed = await runCli(['workspace', 'list', '--json'], { env: postgres });
    t.like(JSON.parse(listed.stdout), [{ slug: 'moving', users: 2 }]);
    await server.stop();

    // Over data: refused, then with --force replaced by the backup's (in one transaction).
    const refused = await runCli(['restore', file], { env: postgres, timeoutMs: 300_000 });
    t.is(refused.code, 1);
    t.deepEqual(refused.errorLines, [`error: PostgreSQL at 127.0.0.1:5432/${new URL(postgres.DATABASE_URL).pathname.slice(1)} holds data; restore into an empty database, or pass --force to replace it`]);
    const forced = await runCli(['restore', file, '--force'], { env: postgres, timeoutMs: 300_000 });
    t.is(forced.code, 0, forced.stderr);
    const knex = knexFactory({ client: 'pg', connection: postgres.DATABASE_URL, pool: { min: 0, max: 1 } });
    t.teardown(() => knex.destroy());
    t.deepEqual((await knex('users').orderBy('email').pluck('email')), [owner.email]);
    t.is(Number((await knex('quotes').count({ n: '*' }))[0].n), 2);
    // Sequences stand where the embedded database left them, not where the replaced data had taken them.
    const { rows } = await knex.raw(`select last_value::int as last from quotes_id_seq`);
    t.is(rows[0].last, quotes[1].id);
  },
);

postgresTest(
  'a damaged embedded backup given to a PostgreSQL restore is one error line, and PostgreSQL is left as it was',
  async (t) => {
    t.timeout(300_000);
    const file = path.join(tempDir(t), 'cut.backup');
    fs.writeFileSync(file, Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0x01, 0x02]));
    const url = await scratchPostgres(t, { migrated: false });
    const result = await runCli(['restore', file], { env: { DATABASE_URL: url } });
    t.is(result.code, 1);
    t.is(result.errorLines.length, 1, result.stderr);
    t.regex(result.errorLines[0], new RegExp(`^error: ${file} (could not be opened as|is not) `));
    const knex = knexFactory({ client: 'pg', connection: url, pool: { min: 0, max: 1 } });
    t.teardown(() => knex.destroy());
    const { rows } = await knex.raw(`select count(*)::int as n from pg_class where relnamespace = 'public'::regnamespace`);
    t.is(rows[0].n, 0, 'nothing created: not even the migrations ran');
  },
);
