import net from 'node:net';
import test from 'ava';
import { embeddedIpv4, OutboundRefused, outboundAgents, outboundPolicy, post } from '../../src/webhooks/outbound.js';

const verdict = (check: (address: string) => void, address: string) => {
  try {
    check(address);
    return 'allowed';
  } catch (err) {
    if (!(err instanceof OutboundRefused)) throw err;
    return 'refused';
  }
};

const strict = outboundPolicy([]);

test('IPv6 addresses that embed a private IPv4 address are refused: mapped, translated, compatible, NAT64, 6to4', (t) => {
  for (const address of [
    '::ffff:127.0.0.1', '::ffff:7f00:1', '::FFFF:10.0.0.1', '0:0:0:0:0:ffff:a9fe:a9fe', '::ffff:0:c0a8:1',
    '::127.0.0.1', '::a00:1',
    '64:ff9b::127.0.0.1', '64:ff9b::a9fe:a9fe', '64:ff9b::c0a8:101', '64:ff9b:0:0:0:0:ac10:1',
    '2002:7f00:1::', '2002:a00:1::1', '2002:c0a8:0101:5::1', '2002:a9fe:a9fe::',
  ]) {
    t.is(verdict(strict, address), 'refused', address);
  }
});

test('the same prefixes around a public IPv4 address are allowed; ordinary public IPv6 too', (t) => {
  for (const address of ['::ffff:8.8.8.8', '64:ff9b::808:808', '64:ff9b::8.8.4.4', '2002:808:808::1', '2606:4700:4700::1111', '2a00:1450:4001:80b::200e', '93.184.215.14']) {
    t.is(verdict(strict, address), 'allowed', address);
  }
});

test('Teredo (2001::/32), local-use NAT64 and the other non-public IPv6 ranges are refused whole', (t) => {
  for (const address of [
    '2001:0:4136:e378:8000:63bf:3fff:fdd2', '2001::1', '2001:0:ffff:ffff::',
    '64:ff9b:1::a00:1', '64:ff9b:1::808:808',
    '::', '::1', 'fe80::1', 'fe80::1%eth0', 'fd00::1', 'fc12:3456::1', 'fec0::1', 'ff02::1',
  ]) {
    t.is(verdict(strict, address), 'refused', address);
  }
  // Neighbours of Teredo are not swept up with it.
  t.is(verdict(strict, '2001:4860:4860::8888'), 'allowed');
});

test('OUTBOUND_ALLOWED_CIDRS applies to the embedded IPv4 address as well as to the IPv6 one', (t) => {
  const loopback = outboundPolicy(['127.0.0.0/8']);
  for (const address of ['127.0.0.1', '::ffff:127.0.0.1', '64:ff9b::7f00:1', '2002:7f00:1::']) t.is(verdict(loopback, address), 'allowed', address);
  t.is(verdict(loopback, '2002:a00:1::'), 'refused');
  const teredo = outboundPolicy(['2001::/32']);
  t.is(verdict(teredo, '2001:0:4136:e378:8000:63bf:3fff:fdd2'), 'allowed');
});

/** The documentation and benchmarking ranges: each refused as IPv4, as IPv4-mapped, NAT64 and 6to4 IPv6, its neighbours allowed. */
const specialV4: [string, string[], string[]][] = [
  ['192.0.2.0/24 (TEST-NET-1)', ['192.0.2.0', '192.0.2.1', '192.0.2.255'], ['192.0.1.255', '192.0.3.0']],
  ['198.51.100.0/24 (TEST-NET-2)', ['198.51.100.0', '198.51.100.7', '198.51.100.255'], ['198.51.99.255', '198.51.101.0']],
  ['203.0.113.0/24 (TEST-NET-3)', ['203.0.113.0', '203.0.113.9', '203.0.113.255'], ['203.0.112.255', '203.0.114.0']],
  ['198.18.0.0/15 (benchmarking)', ['198.18.0.0', '198.18.200.1', '198.19.255.255'], ['198.17.255.255', '198.20.0.0']],
  ['192.88.99.0/24 (6to4 relay anycast)', ['192.88.99.0', '192.88.99.1', '192.88.99.255'], ['192.88.98.255', '192.88.100.0']],
];

/** The IPv6 forms that reach an IPv4 address: IPv4-mapped (dotted and hex), NAT64 and 6to4. */
function v6Forms(v4: string): string[] {
  const [a, b, c, d] = v4.split('.').map(Number);
  const high = ((a << 8) | b).toString(16);
  const low = ((c << 8) | d).toString(16);
  return [`::ffff:${v4}`, `::ffff:${high}:${low}`, `64:ff9b::${high}:${low}`, `2002:${high}:${low}::1`];
}

for (const [name, inside, outside] of specialV4) {
  test(`${name} is refused as IPv4 and in every IPv6 form that embeds it; its neighbours are not`, (t) => {
    for (const address of inside) {
      t.is(verdict(strict, address), 'refused', address);
      for (const form of v6Forms(address)) t.is(verdict(strict, form), 'refused', `${form} (${address})`);
    }
    for (const address of outside) {
      t.is(verdict(strict, address), 'allowed', address);
      t.is(verdict(strict, `::ffff:${address}`), 'allowed', `::ffff:${address}`);
    }
  });
}

test('2001:db8::/32 (IPv6 documentation) is refused, and the other IPv6 documentation and benchmarking ranges; neighbours are allowed', (t) => {
  for (const address of ['2001:db8::', '2001:db8::1', '2001:0db8:ffff:ffff:ffff:ffff:ffff:ffff', '2001:DB8:1234::5', '3fff::1', '2001:2::1', '2001:2:0:ffff::1']) {
    t.is(verdict(strict, address), 'refused', address);
  }
  for (const address of ['2001:db7:ffff:ffff:ffff:ffff:ffff:ffff', '2001:db9::', '2001:4860:4860::8888', '2a00:1450:4001:80b::200e']) {
    t.is(verdict(strict, address), 'allowed', address);
  }
});

test('every range of the former hand-written list is still refused', (t) => {
  for (const address of [
    '0.0.0.0', '0.1.2.3', '10.0.0.1', '100.64.0.1', '100.127.255.254', '127.0.0.1', '127.255.255.254', '169.254.169.254', '172.16.0.1', '172.31.255.254',
    '192.0.0.1', '192.168.1.1', '198.18.0.1', '224.0.0.1', '239.255.255.250', '240.0.0.1', '255.255.255.255',
    '::', '::1', 'fc00::1', 'fdff::1', 'fe80::1', 'febf::1', 'fec0::1', 'ff02::1', '2001::1', '64:ff9b:1::1',
  ]) {
    t.is(verdict(strict, address), 'refused', address);
  }
});

test('OUTBOUND_ALLOWED_CIDRS opens a documentation range, IPv4 (also reached through IPv6) or IPv6, and nothing beside it', (t) => {
  const docs = outboundPolicy(['192.0.2.0/24', '2001:db8::/32']);
  for (const address of ['192.0.2.10', ...v6Forms('192.0.2.10'), '2001:db8::10']) t.is(verdict(docs, address), 'allowed', address);
  for (const address of ['198.51.100.10', '::ffff:198.51.100.10', '10.0.0.1', '2001:2::1']) t.is(verdict(docs, address), 'refused', address);
});

test('the refusal names the special range', (t) => {
  t.regex(t.throws(() => strict('198.51.100.7'), { instanceOf: OutboundRefused })!.message, /198\.51\.100\.7: not a public address .*reserved.*OUTBOUND_ALLOWED_CIDRS/);
  t.regex(t.throws(() => strict('::ffff:192.0.2.1'), { instanceOf: OutboundRefused })!.message, /::ffff:192\.0\.2\.1 \(which embeds 192\.0\.2\.1\)/);
});

test('the refusal names the address and the IPv4 address it embeds', (t) => {
  const err = t.throws(() => strict('2002:a00:1::1'), { instanceOf: OutboundRefused });
  t.regex(err!.message, /2002:a00:1::1 .*embeds 10\.0\.0\.1/);
  t.regex(err!.message, /OUTBOUND_ALLOWED_CIDRS/);
});

test('embeddedIpv4 reads every spelling of the prefixes it knows and nothing else', (t) => {
  t.is(embeddedIpv4('::ffff:192.168.1.1'), '192.168.1.1');
  t.is(embeddedIpv4('0:0:0:0:0:FFFF:C0A8:0101'), '192.168.1.1');
  t.is(embeddedIpv4('64:ff9b::192.0.2.33'), '192.0.2.33');
  t.is(embeddedIpv4('2002:c000:221::'), '192.0.2.33');
  t.is(embeddedIpv4('2606:4700::1111'), undefined);
  t.is(embeddedIpv4('10.0.0.1'), undefined);
});

/**
 * A receiver that answers the first request of each connection and keeps it alive, then resets the
 * connection when a second request arrives on it: what a receiver closing idle keep-alive connections
 * does when the close and the next request cross. `resetFirst` resets every connection at once.
 */
async function resettingReceiver(resetFirst: boolean) {
  let connections = 0;
  let answered = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    connections++;
    sockets.add(socket);
    let requests = 0;
    let buffer = '';
    socket.on('error', () => undefined);
    socket.on('data', (chunk) => {
      buffer += chunk.toString('latin1');
      if (!buffer.includes('\r\n\r\n') || !buffer.endsWith('{}')) return;
      buffer = '';
      requests++;
      if (resetFirst || requests > 1) return void socket.resetAndDestroy();
      answered++;
      socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    stats: () => ({ connections, answered }),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy(); // the client's agent keeps its connection
      }),
  };
}

const open = outboundPolicy(['127.0.0.0/8']);
const postOptions = () => ({ headers: { 'Content-Type': 'application/json' }, timeoutMs: 60_000, maxBody: 1024, check: open, agents: outboundAgents(open, 4) });

test('a kept-alive connection reset when reused is sent again once on a new connection', async (t) => {
  const receiver = await resettingReceiver(false);
  t.teardown(receiver.close);
  const options = postOptions();
  t.like(await post(receiver.url, '{}', options), { status: 200, body: 'ok', error: null });
  // The second POST reuses the connection, which the receiver resets: it goes out again on a new one.
  t.like(await post(receiver.url, '{}', options), { status: 200, body: 'ok', error: null });
  t.deepEqual(receiver.stats(), { connections: 2, answered: 2 });
});

test('a reset on a new connection is an error, not sent again', async (t) => {
  const receiver = await resettingReceiver(true);
  t.teardown(receiver.close);
  const result = await post(receiver.url, '{}', postOptions());
  t.is(result.status, null);
  t.truthy(result.error);
  t.deepEqual(receiver.stats(), { connections: 1, answered: 0 });
});
