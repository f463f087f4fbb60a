/** /app/settings/keys: the public key, the tracking tag to paste into a shop, and rotating the key pair. */
import type { AppDeps } from '../http/deps.js';
import type { Principal } from '../http/principal.js';
import { Validation } from '../errors.js';
import { html, type Html } from '../templates.js';
import { rotateKeys } from '../workspaces/service.js';
import { page, type PageDef } from './page.js';
import { shell } from './layout.js';
import type { Flash } from './flash.js';
import { fieldErrors, formText, type FieldErrors } from './forms.js';

/** A read-only value with its copy button (app.js); without script the text is there to select. */
function copyable(id: string, label: string, value: string, hint?: Html | string, rows = 0): Html {
  const box = rows
    ? html`<textarea id="${id}" rows="${rows}" readonly spellcheck="false">${value}</textarea>`
    : html`<input id="${id}" type="text" readonly value="${value}" spellcheck="false">`;
  return html`<div class="field"><label for="${id}">${label}</label><div class="copy-row">${box}<button type="button" class="small" data-copy="#${id}">Copy</button></div>${hint ? html`<p class="hint">${hint}</p>` : ''}</div>`;
}

/** The tag as docs/api.md gives it: one script element, async, from this site. */
export const tagSnippet = (appUrl: string, slug: string) => `<script src="${appUrl}/tag/${encodeURIComponent(slug)}.js" async></script>`;

const secretKeyUse = html`<p>The secret key (<code>sk_live_…</code>) is for your shop's server only, never a web page: it links a visitor to a customer (<code>POST /api/v1/track/join</code> and join codes) and creates external quotes and orders (<code>POST /api/v1/quotes/external</code>, <code>POST /api/v1/orders/external</code>). It is shown once, when it is issued.</p>`;

export function keyPages({ db, config }: AppDeps): PageDef[] {
  const keysPage = (auth: Principal, publicKey: string, fresh: { secret_key: string } | null, flash: Flash | null = null): Html => {
    const isOwner = auth.role === 'owner';
    return shell(auth, {
      title: 'Keys and tracking',
      section: 'settings',
      flash,
      content: html`<div class="page-head"><h1>Keys and tracking</h1></div>
${
  fresh
    ? html`<section class="card" aria-labelledby="new-heading">
  <h2 id="new-heading">Your new secret key</h2>
  <div class="flash flash-ok" role="status">The keys were rotated. The old public and secret keys no longer work.</div>
  ${copyable('secret-key', 'Secret key', fresh.secret_key, 'Copy it now and store it on your server: it is shown only on this page, this once.')}
</section>`
    : ''
}
<section class="card" aria-labelledby="tag-heading">
  <h2 id="tag-heading">Tracking tag</h2>
  <p>Paste this into every page of your shop, before <code>&lt;/body&gt;</code>. It records page views and lets you call <code>window.quoting.track(type, props)</code>.</p>
  ${copyable('tag-snippet', 'Tag', tagSnippet(config.APP_URL, auth.workspace.slug), undefined, 2)}
  <p class="hint">While a visitor's browser sends Global Privacy Control, the tag sends and stores nothing.</p>
</section>
<section class="card" aria-labelledby="keys-heading">
  <h2 id="keys-heading">API keys</h2>
  ${copyable('public-key', 'Public key', publicKey, 'The tag carries it; it may appear in web pages.')}
  ${secretKeyUse}
  ${isOwner ? html`<p class="actions"><a class="button danger" href="/app/settings/keys/rotate">Rotate the keys…</a></p>` : ''}
</section>`,
    });
  };

  const confirmPage = (auth: Principal, errors: FieldErrors): Html => {
    const error = errors.confirm;
    return shell(auth, {
      title: 'Rotate the keys',
      section: 'settings',
      content: html`<div class="page-head"><h1>Rotate the keys</h1></div>
<section class="card">
  <p>A new public key and a new secret key are issued. <strong>The old ones stop working at once</strong>: your shop's server gets 401 until it has the new secret key, and the tracking tag picks up the new public key on the next page load.</p>
  ${secretKeyUse}
  <form method="post" action="/app/settings/keys/rotate" class="stack">
    <div class="field${error ? ' invalid' : ''}">
      <label class="check"><input type="checkbox" name="confirm" value="yes" required${error ? html` aria-invalid="true" aria-describedby="f-confirm-error"` : ''}> <span>I understand that the current keys stop working now</span></label>
      ${error ? html`<p class="field-error" id="f-confirm-error">${error}</p>` : ''}
    </div>
    <div class="actions"><button type="submit" class="danger">Rotate the keys</button><a class="button" href="/app/settings/keys">Cancel</a></div>
  </form>
</section>`,
    });
  };

  return [
    // GET /workspace (the public key) is for every member; rotating is the owner's.
    page({
      method: 'get', path: '/app/settings/keys', who: 'member',
      handle: async ({ auth, flash }) => keysPage(auth, auth.workspace.public_key, null, flash),
    }),
    page({
      method: 'get', path: '/app/settings/keys/rotate', who: 'owner',
      handle: async ({ auth }) => confirmPage(auth, {}),
    }),
    page({
      method: 'post', path: '/app/settings/keys/rotate', who: 'owner',
      handle: async ({ auth, form }) => {
        if (formText(form, 'confirm') !== 'yes') throw new Validation('confirm', 'Tick the box to confirm: the current keys stop working at once.');
        const keys = await rotateKeys(db, auth.workspace.id);
        // The secret is on this answer only: no redirect, no flash cookie, nothing in a URL.
        return keysPage(auth, keys.public_key, keys);
      },
      invalid: async ({ auth }, error) => confirmPage(auth, fieldErrors(error)),
    }),
  ];
}
