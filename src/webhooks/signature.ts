import { createHmac } from 'node:crypto';

/** `t=<unix>,v1=<hex>[,v1=<hex>]`: HMAC-SHA256 of `<t>.<body>` with each secret (two during a rotation overlap). */
export function signatureHeader(secrets: string[], timestamp: number, body: string): string {
  const macs = secrets.map((secret) => `v1=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`);
  return [`t=${timestamp}`, ...macs].join(',');
}
