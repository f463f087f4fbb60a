import { fail, ok, warn, type Check } from './check.js';

const TIMEOUT_MS = 10_000;

export const smtp: Check = {
  id: 'smtp',
  title: 'Mail (SMTP)',
  reads: ['SMTP_URL'],
  async run(ctx) {
    const smtpUrl = ctx.config.SMTP_URL;
    if (!smtpUrl) {
      return warn('SMTP_URL is unset: invites, password resets and quote mails answer 503', `set SMTP_URL=smtp://user:pass@mail.example.com:587 ${ctx.settingsIn}`);
    }
    const url = new URL(smtpUrl);
    const where = `${url.hostname}:${url.port || (url.protocol === 'smtps:' ? 465 : 587)}`;
    const nodemailer = await import('nodemailer');
    const transport = nodemailer.createTransport({ url: smtpUrl, connectionTimeout: TIMEOUT_MS, greetingTimeout: TIMEOUT_MS, socketTimeout: TIMEOUT_MS });
    try {
      await transport.verify();
      return ok(`${where} answers and accepts the login`);
    } catch (err) {
      const reason = ((err as Error).message ?? String(err)).split('\n')[0];
      return fail(`${where} did not answer as an SMTP server should: ${reason}`, `check the host, port and credentials in SMTP_URL ${ctx.settingsIn}, and that this server may connect to it`);
    } finally {
      transport.close();
    }
  },
};

export const stripe: Check = {
  id: 'stripe',
  title: 'Payments (Stripe)',
  reads: ['STRIPE_SECRET_KEY', 'STRIPE_WEBHOOK_SECRET', 'STRIPE_API_BASE'],
  async run(ctx) {
    const { STRIPE_SECRET_KEY: key, STRIPE_WEBHOOK_SECRET: secret } = ctx.config;
    if (!key) {
      if (secret) return warn('STRIPE_WEBHOOK_SECRET is set without STRIPE_SECRET_KEY: payments are off', `set STRIPE_SECRET_KEY=sk_live_... ${ctx.settingsIn}`);
      return warn('STRIPE_SECRET_KEY is unset: quotes show no Pay button and payment operations answer 503', `set STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET ${ctx.settingsIn} to take payments`);
    }
    if (!/^(sk|rk)_(live|test)_[A-Za-z0-9]{8,}$/.test(key)) {
      return fail('STRIPE_SECRET_KEY does not look like a Stripe secret key (sk_live_..., sk_test_... or rk_...)', 'copy the secret key from the Stripe dashboard (Developers, API keys)');
    }
    if (!secret) return fail('STRIPE_WEBHOOK_SECRET is unset: payments go through but quotes are never marked paid', `set STRIPE_WEBHOOK_SECRET=whsec_... (the signing secret of the Stripe webhook endpoint) ${ctx.settingsIn}`);
    if (!/^whsec_[A-Za-z0-9]{8,}$/.test(secret)) return fail('STRIPE_WEBHOOK_SECRET does not look like a signing secret (whsec_...)', "copy the endpoint's signing secret from the Stripe dashboard (Developers, Webhooks)");
    const { default: Stripe } = await import('stripe');
    const base = ctx.config.STRIPE_API_BASE ? new URL(ctx.config.STRIPE_API_BASE) : undefined;
    const client = new Stripe(key, {
      maxNetworkRetries: 0,
      timeout: TIMEOUT_MS,
      ...(base && { protocol: base.protocol === 'http:' ? 'http' : 'https', host: base.hostname.replace(/^\[(.*)\]$/, '$1'), port: base.port || (base.protocol === 'http:' ? 80 : 443) }),
    });
    const mode = key.includes('_test_') ? 'test mode' : 'live mode';
    try {
      await client.balance.retrieve();
      return ok(`keys are well formed and Stripe accepts the secret key (${mode})`);
    } catch (err) {
      const e = err as { type?: string; message?: string };
      // A restricted key without balance access is still a key Stripe knows.
      if (e.type === 'StripePermissionError') return ok(`keys are well formed and Stripe knows the key (${mode}, restricted)`);
      if (e.type === 'StripeAuthenticationError') return fail('Stripe refuses STRIPE_SECRET_KEY (revoked or mistyped)', 'create a new secret key in the Stripe dashboard and set it');
      return fail(`Stripe could not be reached: ${e.message ?? String(err)}`, 'check that this server may reach api.stripe.com over https (firewall, proxy, DNS)');
    }
  },
};
