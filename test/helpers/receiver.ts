import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { PATIENCE_MS } from './patience.js';

export interface Received {
  headers: http.IncomingHttpHeaders;
  /** The raw body, exactly as sent. */
  raw: string;
  body: any;
  /** Which of the receiver's secrets verified the signature (empty when none did). */
  verifiedWith: string[];
  at: number;
}

/**
 * Verifies a Service-Signature header the way a subscriber would, written here independently of the
 * service: raw body, HMAC-SHA256 of "t.body", constant-time comparison, 300 s tolerance, any v1 may match.
 */
export function verifySignature(header: string | undefined, raw: string, secret: string, now = Date.now() / 1000): boolean {
  if (!header) return false;
  const parts = header.split(',').map((part) => part.split('='));
  const t = Number(parts.find(([key]) => key === 't')?.[1]);
  if (!Number.isInteger(t) || Math.abs(now - t) > 300) return false;
  const expected = createHmac('sha256', secret).update(`${t}.${raw}`).digest();
  return parts
    .filter(([key]) => key === 'v1')
    .some(([, hex]) => {
      const given = Buffer.from(hex ?? '', 'hex');
      return given.length === expected.length && timingSafeEqual(given, expected);
    });
}

type Responder = (req: http.IncomingMessage, res: http.ServerResponse, received: Received) => void;

/** A real HTTP receiver on loopback that records every request and answers as told (200 by default). */
export async function startReceiver(secrets: string[] = []) {
  const received: Received[] = [];
  const waiters: (() => void)[] = [];
  let respond: Responder = (_req, res) => res.end('ok');
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      try {
        body = JSON.parse(raw);
      } catch {
        body = undefined;
      }
      const header = req.headers['service-signature'] as string | undefined;
      const entry: Received = { headers: req.headers, raw, body, verifiedWith: receiver.secrets.filter((s) => verifySignature(header, raw, s)), at: Date.now() };
      received.push(entry);
      for (const wake of waiters.splice(0)) wake();
      respond(req, res, entry);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const receiver = {
    url: `http://127.0.0.1:${port}`,
    received,
    secrets,
    /** How the next requests are answered. */
    respondWith(responder: Responder) {
      respond = responder;
    },
    /** Resolves once `count` requests have arrived (or rejects after `ms`, a hang guard). */
    async waitFor(count: number, ms = PATIENCE_MS): Promise<Received[]> {
      const deadline = Date.now() + ms;
      while (received.length < count) {
        if (Date.now() > deadline) throw new Error(`receiver got ${received.length} of ${count} requests in ${ms} ms`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 50);
          waiters.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
      return received;
    },
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return receiver;
}
