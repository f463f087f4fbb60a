import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net, { BlockList, isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Whether an address lies in one of IANA's special-purpose ranges (private, loopback, link-local, documentation,
 * benchmarking, multicast, reserved, Teredo, …): ipaddr.js's `range()` names the range, `unicast` being everything
 * else. Returns the range's name, or null for an ordinary public address; an address that does not parse counts as special.
 */
function specialRange(address: string): string | null {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(address);
  } catch {
    return 'unparsable';
  }
  const range = parsed.range();
  return range === 'unicast' ? null : range;
}

/**
 * The IPv4 address an IPv6 address stands for, where the prefix says it embeds one: IPv4-mapped
 * (::ffff:0:0/96), IPv4-translated (::ffff:0:0:0/96) and the deprecated IPv4-compatible (::/96) forms,
 * well-known NAT64 (64:ff9b::/96) and 6to4 (2002::/16). Reaching such an address reaches that IPv4
 * host, so the IPv4 policy applies.
 */
export function embeddedIpv4(address: string): string | undefined {
  if (isIP(address) !== 6) return undefined;
  const g = ipv6Groups(address);
  const quad = (high: number, low: number) => [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
  const zero = (from: number, to: number) => g.slice(from, to).every((group) => group === 0);
  if (zero(0, 5) && (g[5] === 0xffff || g[5] === 0)) return quad(g[6], g[7]);
  if (zero(0, 4) && g[4] === 0xffff && g[5] === 0) return quad(g[6], g[7]); // IPv4-translated (SIIT)
  if (g[0] === 0x64 && g[1] === 0xff9b && zero(2, 6)) return quad(g[6], g[7]);
  if (g[0] === 0x2002) return quad(g[1], g[2]);
  return undefined;
}

/** The eight 16-bit groups; URL parsing first brings every spelling (dotted tail, case, zeros) to one form. */
function ipv6Groups(address: string): number[] {
  const host = new URL(`http://[${address.replace(/%.*$/, '')}]/`).hostname.slice(1, -1);
  const [head, tail] = host.split('::');
  const part = (text: string | undefined) => (text ? text.split(':') : []);
  const groups = tail === undefined ? part(head) : [...part(head), ...Array<string>(8 - part(head).length - part(tail).length).fill('0'), ...part(tail)];
  return groups.map((group) => parseInt(group, 16));
}

export class OutboundRefused extends Error {}

/**
 * Checks one resolved address; allowed CIDRs (OUTBOUND_ALLOWED_CIDRS) win over the special ranges. An IPv6 address
 * that embeds an IPv4 one (see embeddedIpv4) is judged by that IPv4 address alone: its own prefix (IPv4-mapped,
 * NAT64, 6to4) is a special range only as a way of reaching the IPv4 host.
 */
export function outboundPolicy(allowedCidrs: string[]): (address: string) => void {
  const allowed = new BlockList();
  for (const cidr of allowedCidrs) {
    const [address, bits] = cidr.split('/');
    allowed.addSubnet(address, Number(bits), isIP(address) === 6 ? 'ipv6' : 'ipv4');
  }
  const refuse = (address: string, range: string, embedded?: string) =>
    new OutboundRefused(
      `refused to connect to ${address}${embedded ? ` (which embeds ${embedded})` : ''}: not a public address (IANA special-purpose range: ${range}); allow it with OUTBOUND_ALLOWED_CIDRS`,
    );
  return (address) => {
    const family: 'ipv4' | 'ipv6' = isIP(address) === 6 ? 'ipv6' : 'ipv4';
    if (allowed.check(address, family)) return;
    // Teredo and local-use NAT64 are not decoded (the one hides its client, the other maps into a network of the
    // operator's choosing), so they are judged as the special ranges they are, and refused.
    const embedded = embeddedIpv4(address);
    if (embedded && allowed.check(embedded, 'ipv4')) return;
    const range = specialRange(embedded ?? address);
    if (range) throw refuse(address, range, embedded);
  };
}

export interface PostResult {
  status: number | null;
  /** The first `maxBody` bytes of the response, as text. */
  body: string | null;
  error: string | null;
}

export interface PostOptions {
  headers: Record<string, string>;
  timeoutMs: number;
  maxBody: number;
  check: (address: string) => void;
  agents: { http: http.Agent; https: https.Agent };
}

/** Keep-alive agents whose DNS lookups pass through the policy: the check runs on the IP actually connected to. */
export function outboundAgents(check: (address: string) => void, maxSockets = 64): { http: http.Agent; https: https.Agent } {
  const lookup: net.LookupFunction = (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      const list = addresses as dns.LookupAddress[];
      try {
        for (const { address } of list) check(address);
      } catch (refusal) {
        return callback(refusal as Error, '', 0);
      }
      if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, list);
      callback(null, list[0].address, list[0].family);
    });
  };
  return {
    http: new http.Agent({ keepAlive: true, maxSockets, lookup } as http.AgentOptions),
    https: new https.Agent({ keepAlive: true, maxSockets, lookup } as https.AgentOptions),
  };
}

/**
 * POSTs `body` and reports the outcome without throwing: the status, the first `maxBody` bytes of
 * the response, or the error (network, timeout, refused address). Redirects are never followed.
 */
export function post(url: string, body: string, options: PostOptions): Promise<PostResult> {
  return new Promise((resolve) => {
    let settled = false;
    const finish = (result: PostResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    let target: URL;
    try {
      target = new URL(url);
      // An IP literal is connected to without a lookup, so it is checked here.
      const literal = target.hostname.replace(/^\[|\]$/g, '');
      if (isIP(literal)) options.check(literal);
    } catch (err) {
      return resolve({ status: null, body: null, error: (err as Error).message });
    }
    const client = target.protocol === 'https:' ? https : http;
    let request: http.ClientRequest;
    const timer = setTimeout(() => {
      request.destroy(new Error(`timed out after ${options.timeoutMs / 1000} s`));
    }, options.timeoutMs);
    const send = (retry: boolean) => {
      request = client.request(target, {
        method: 'POST',
        headers: { ...options.headers, 'Content-Length': String(Buffer.byteLength(body)) },
        agent: target.protocol === 'https:' ? options.agents.https : options.agents.http,
      });
      let answered = false;
      request.on('error', (err: NodeJS.ErrnoException) => {
        // A kept-alive connection the receiver closed while idle fails as soon as it is reused (the
        // close and our request crossed on the wire). The receiver never read that request, so it is
        // sent once more on a new connection, as Node's documentation advises; any other error counts.
        if (retry && !answered && request.reusedSocket && err.code === 'ECONNRESET') return send(false);
        finish({ status: null, body: null, error: err.message });
      });
      request.on('response', (response) => {
        answered = true;
        const chunks: Buffer[] = [];
        let size = 0;
        const done = () => {
          const text = Buffer.concat(chunks).subarray(0, options.maxBody).toString('utf8').replace(/\u0000/g, '');
          finish({ status: response.statusCode ?? null, body: text, error: null });
        };
        response.on('data', (chunk: Buffer) => {
          if (size >= options.maxBody) return;
          chunks.push(chunk);
          size += chunk.length;
          if (size >= options.maxBody) {
            done();
            response.destroy(); // the rest is not kept, so it is not read
          }
        });
        response.on('end', done);
        response.on('error', (err) => finish({ status: response.statusCode ?? null, body: null, error: err.message }));
      });
      request.end(body);
    };
    send(true);
  });
}
