import Stripe from 'stripe';
import type { Config } from '../config.js';
import { Conflict, HttpError, Unavailable } from '../errors.js';
import { log } from '../log.js';

/** True when the Pay button can work: the public quote page shows it only then. */
export function paymentsConfigured(config: Config): boolean {
  return Boolean(config.STRIPE_SECRET_KEY);
}

const clients = new WeakMap<Config, Stripe>();

/**
 * The Stripe client of this configuration, built on first use; 503 when STRIPE_SECRET_KEY is unset.
 * STRIPE_API_BASE (scheme, host and port; any path is ignored, the SDK always calls /v1/...) points
 * it elsewhere, e.g. at a fake on loopback in tests.
 */
export function stripeClient(config: Config): Stripe {
  const key = config.STRIPE_SECRET_KEY;
  if (!key) throw new Unavailable('Payments are not configured on this server (STRIPE_SECRET_KEY is unset).');
  let client = clients.get(config);
  if (!client) {
    client = new Stripe(key, {
      ...apiBase(config.STRIPE_API_BASE),
      // POSTs are retried with the SDK's idempotency key, so a retry never creates a second session.
      maxNetworkRetries: 1,
      timeout: 20_000,
      appInfo: { name: 'quoting' },
    });
    clients.set(config, client);
  }
  return client;
}

function apiBase(base: string | undefined): Pick<Stripe.StripeConfig, 'host' | 'port' | 'protocol'> {
  if (!base) return {};
  const url = new URL(base);
  const protocol = url.protocol === 'http:' ? 'http' : 'https';
  return {
    protocol,
    host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port || (protocol === 'http' ? 80 : 443),
  };
}

/** The webhook signing secret; 503 when it (or the API key) is unset. */
export function webhookSecret(config: Config): string {
  if (!config.STRIPE_SECRET_KEY || !config.STRIPE_WEBHOOK_SECRET) {
    throw new Unavailable(`Payments are not configured on this server (${config.STRIPE_SECRET_KEY ? 'STRIPE_WEBHOOK_SECRET' : 'STRIPE_SECRET_KEY'} is unset).`);
  }
  return config.STRIPE_WEBHOOK_SECRET;
}

/** Runs a Stripe API call; any failure (unreachable, timeout, 5xx, refusal) becomes a readable 502. */
export async function callStripe<T>(what: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw stripeFailure(what, err);
  }
}

function stripeFailure(what: string, err: unknown): HttpError {
  if (err instanceof HttpError) return err;
  const e = err as { type?: string; statusCode?: number; message?: string; code?: string };
  log.warn('stripe request failed', { what, type: e.type, status: e.statusCode, code: e.code, error: e.message });
  if (e.type === 'StripeConnectionError' || e.statusCode === undefined) {
    return new HttpError(502, `The payment processor (Stripe) could not be reached to ${what}; try again shortly.`);
  }
  if (e.statusCode >= 500) return new HttpError(502, `The payment processor (Stripe) failed to ${what} (HTTP ${e.statusCode}); try again shortly.`);
  return new HttpError(502, `The payment processor (Stripe) refused to ${what}: ${e.message ?? `HTTP ${e.statusCode}`}`);
}

/** Currencies Stripe takes in whole units (https://docs.stripe.com/currencies#zero-decimal). */
const zeroDecimal = new Set(['bif', 'clp', 'djf', 'gnf', 'jpy', 'kmf', 'krw', 'mga', 'pyg', 'rwf', 'ugx', 'vnd', 'vuv', 'xaf', 'xof', 'xpf']);
/** Currencies Stripe takes in thousandths, with the last digit 0. */
const threeDecimal = new Set(['bhd', 'jod', 'kwd', 'omr', 'tnd']);

/**
 * A two-decimal money string ("1234.56") in the currency's smallest unit for Stripe (123456),
 * by string arithmetic only. A zero-decimal currency cannot take a fraction: 409.
 */
export function minorUnits(amount: string, currency: string): number {
  const match = /^(\d+)\.(\d{2})$/.exec(amount.trim());
  if (!match) throw new Conflict(`The amount ${JSON.stringify(amount)} cannot be charged.`);
  const [, whole, cents] = match;
  const code = currency.toLowerCase();
  let digits: string;
  if (zeroDecimal.has(code)) {
    if (cents !== '00') throw new Conflict(`${currency.toUpperCase()} amounts are charged in whole units; ${amount} has a fraction.`);
    digits = whole;
  } else {
    digits = whole + cents + (threeDecimal.has(code) ? '0' : '');
  }
  const units = BigInt(digits);
  if (units > BigInt(Number.MAX_SAFE_INTEGER)) throw new Conflict(`The amount ${amount} is too large to charge.`);
  return Number(units);
}
