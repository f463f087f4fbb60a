import net from 'node:net';
import test from 'ava';
import { embeddedIpv4, OutboundRefused, outboundAgents, outboundPolicy, post } from '../src/webhooks/outbound.js';

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
