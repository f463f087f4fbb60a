/** /app/settings: the workspace as its owner sees it, and the way to each setting. */
import { html } from '../templates.js';
import type { AppDeps } from '../http/deps.js';
import { dateText } from '../dates.js';
import { page, type PageDef } from './page.js';
import { shell } from './layout.js';

const statusText: Record<string, string> = { trialing: 'Trial', active: 'Active', suspended: 'Suspended' };

export function settingsPages(_deps: AppDeps): PageDef[] {
  return [
    page({
      method: 'get', path: '/app/settings', who: 'owner',
      handle: async ({ auth, flash }) => {
        const workspace = auth.workspace;
        return shell(auth, {
          title: 'Settings',
          section: 'settings',
          flash,
          content: html`<h1>Settings</h1>
<div class="grid">
<section class="card" aria-labelledby="ws-heading">
  <h2 id="ws-heading">Workspace</h2>
  <dl class="meta">
    <div><dt>Name</dt><dd>${workspace.name}</dd></div>
    <div><dt>Slug</dt><dd><code>${workspace.slug}</code></dd></div>
    <div><dt>Status</dt><dd>${statusText[workspace.status] ?? workspace.status}${workspace.status === 'trialing' && workspace.trial_ends_at ? ` until ${dateText(workspace.trial_ends_at.toISOString())}` : ''}</dd></div>
    <div><dt>Created</dt><dd>${dateText(new Date(workspace.created_at).toISOString())}</dd></div>
  </dl>
</section>
<section class="card" aria-labelledby="you-heading">
  <h2 id="you-heading">Your account</h2>
  <dl class="meta">
    <div><dt>Name</dt><dd>${auth.user.name}</dd></div>
    <div><dt>Email</dt><dd>${auth.user.email}</dd></div>
    <div><dt>Role</dt><dd>Owner</dd></div>
  </dl>
  <p class="actions"><a class="button" href="/app/settings/password">Change your password</a></p>
</section>
<section class="card" aria-labelledby="integrations-heading">
  <h2 id="integrations-heading">Integrations</h2>
  <ul class="plain">
    <li><a href="/app/settings/keys">Keys and tracking</a>: the API keys and the tracking tag for your shop.</li>
    <li><a href="/app/settings/webhooks">Webhooks</a>: events sent to your servers, and their deliveries.</li>
  </ul>
</section>
</div>`,
        });
      },
    }),
  ];
}
