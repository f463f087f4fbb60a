import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net, { BlockList, isIP } from 'node:net';

/** Loopback, private, link-local and other non-public ranges that outbound requests may not reach. */
const forbidden = new BlockList();
for (const [address, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) {
  forbidden.addSubnet(address, prefix, 'ipv4');
}
for (const [address, prefix] of [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8]] as const) {
  forbidden.addSubnet(address, prefix, 'ipv6');
}

export class OutboundRefused extends Error {}

/** Checks one resolved address; allowed CIDRs (OUTBOUND_ALLOWED_CIDRS) win over the forbidden ranges. */
export function outboundPolicy(allowedCidrs: string[]): (address: string) => void {
  const allowed = new BlockList();
  for (const cidr of allowedCidrs) {
    const [address, bits] = cidr.split('/');
    allowed.addSubnet(address, Number(bits), isIP(address) === 6 ? 'ipv6' : 'ipv4');
  }
  return (address) => {
    const family: 'ipv4' | 'ipv6' = isIP(address) === 6 ? 'ipv6' : 'ipv4';
    const mapped = family === 'ipv6' ? /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1] : undefined;
    const [checked, checkedFamily]: [string, 'ipv4' | 'ipv6'] = mapped ? [mapped, 'ipv4'] : [address, family];
    if (allowed.check(checked, checkedFamily)) return;
    if (forbidden.check(checked, checkedFamily)) {
      throw new OutboundRefused(`refused to connect to ${address}: a private, loopback or link-local address (allow it with OUTBOUND_ALLOWED_CIDRS)`);
    }
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
    const request = client.request(target, {
      method: 'POST',
      headers: { ...options.headers, 'Content-Length': String(Buffer.byteLength(body)) },
      agent: target.protocol === 'https:' ? options.agents.https : options.agents.http,
    });
    const timer = setTimeout(() => {
      request.destroy(new Error(`timed out after ${options.timeoutMs / 1000} s`));
    }, options.timeoutMs);
    request.on('error', (err) => finish({ status: null, body: null, error: err.message }));
    request.on('response', (response) => {
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
  });
}
