import { isIP } from 'node:net';
import { fail, ok, warn, type Check } from './check.js';

export const configuration: Check = {
  id: 'configuration',
  title: 'Configuration',
  async run(ctx) {
    if (ctx.configError) return fail(ctx.configError.replace(/\s*\n\s*/g, '; '), `correct the variables named, ${ctx.settingsIn}`);
    return ok(`every setting is valid (${ctx.settingsIn.replace(/^in /, '')})`);
  },
};

export const nodeVersion: Check = {
  id: 'node',
  title: 'Node.js',
  async run() {
    const [major, minor] = process.versions.node.split('.').map(Number);
    if (major > 20 || (major === 20 && minor >= 19)) return ok(`${process.version}`);
    return fail(`${process.version} is older than the 20.19 this program needs`, 'install Node.js 22 LTS (https://nodejs.org/en/download) and restart');
  },
};

/** Names that never reach the public internet: links mailed to customers could not be opened. */
export function isPrivateHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost') || host.endsWith('.local') || host.endsWith('.internal') || host.endsWith('.lan')) return true;
  const family = isIP(host);
  if (family === 4) {
    const [a, b] = host.split('.').map(Number);
    return a === 10 || a === 127 || a === 0 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 169 && b === 254) || (a === 100 && b >= 64 && b <= 127);
  }
  if (family === 6) return host === '::1' || host === '::' || /^f[cd]/.test(host) || /^fe[89ab]/.test(host);
  return !host.includes('.');
}

export const appUrl: Check = {
  id: 'app_url',
  title: 'APP_URL',
  reads: ['APP_URL', 'HOST', 'PORT'],
  async run(ctx) {
    const raw = ctx.env.APP_URL?.trim();
    const fixUrl = `set APP_URL to the public address, e.g. APP_URL=https://quotes.example.com, ${ctx.settingsIn}`;
    if (!raw) return warn(`unset, so links use ${ctx.config.APP_URL}, which customers cannot open`, fixUrl);
    const url = new URL(ctx.config.APP_URL);
    if (isPrivateHost(url.hostname)) return warn(`${ctx.config.APP_URL} is not a public address: links mailed to customers will not open`, fixUrl);
    if (url.protocol !== 'https:') {
      return warn(`${ctx.config.APP_URL} is a public host without https: sessions and quote links travel unencrypted`, 'serve it over TLS (a reverse proxy such as Caddy or nginx) and set APP_URL to the https:// address');
    }
    return ok(ctx.config.APP_URL);
  },
};

export const trustProxy: Check = {
  id: 'trust_proxy',
  title: 'TRUST_PROXY',
  reads: ['APP_URL', 'HOST', 'TRUST_PROXY'],
  async run(ctx) {
    const https = ctx.config.APP_URL.startsWith('https:');
    const host = ctx.config.HOST;
    const loopback = host === 'localhost' || host === '::1' || host.startsWith('127.');
    if (https && !ctx.config.TRUST_PROXY && loopback) {
      return warn('APP_URL is https but the server listens on loopback without TRUST_PROXY: behind the TLS proxy, session cookies lose Secure and client addresses are the proxy\'s', `set TRUST_PROXY=1 ${ctx.settingsIn}`);
    }
    if (ctx.config.TRUST_PROXY && !loopback) {
      return warn(`TRUST_PROXY=1 while listening on ${host}: anyone reaching that address can forge X-Forwarded-For and X-Forwarded-Proto`, `listen on 127.0.0.1 behind the proxy (HOST=127.0.0.1), or set TRUST_PROXY=0, ${ctx.settingsIn}`);
    }
    return ok(ctx.config.TRUST_PROXY ? 'on (the server listens on loopback behind a proxy)' : 'off');
  },
};
