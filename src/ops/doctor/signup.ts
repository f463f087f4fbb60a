import { ok, warn, type Check } from './check.js';
import { isPrivateHost } from './settings.js';

/** Open sign-up on an address the internet reaches lets anyone who finds it create a workspace on this server. */
export const signup: Check = {
  id: 'signup',
  title: 'Sign-up',
  reads: ['SIGNUP', 'APP_URL', 'HOST', 'PORT'],
  async run(ctx) {
    if (ctx.config.SIGNUP === 'closed') return ok('closed: accounts come from invites and the CLI');
    const url = ctx.config.APP_URL;
    if (isPrivateHost(new URL(url).hostname)) return ok(`open, on ${url}, which is not a public address`);
    const open = ctx.env.SIGNUP?.trim() ? 'open' : 'open (the default)';
    return warn(
      `${open} on the public address ${url}: anyone who finds it can create a workspace here`,
      `set SIGNUP=closed ${ctx.settingsIn}: accounts then come from invites and 'quoting workspace create' (leave it open only if anyone may sign up)`,
    );
  },
};
