import { html, type Html, type Markup } from '../templates.js';
import type { Principal } from '../http/principal.js';
import { assetUrl } from './assets.js';
import type { Flash } from './flash.js';

/** The part of the app a page belongs to: its tab in the navigation. */
export type Section = 'home' | 'quotes' | 'orders' | 'customers' | 'products' | 'channels' | 'imports' | 'settings';

const sections: { section: Section; label: string; href: string; owner?: boolean }[] = [
  { section: 'quotes', label: 'Quotes', href: '/app/quotes' },
  { section: 'orders', label: 'Orders', href: '/app/orders' },
  { section: 'customers', label: 'Customers', href: '/app/customers' },
  { section: 'products', label: 'Products', href: '/app/products' },
  { section: 'channels', label: 'Channels', href: '/app/channels' },
  // Whoever the imports API lets in (any signed-in member): the services apply the same rights.
  { section: 'imports', label: 'Imports', href: '/app/imports' },
  { section: 'settings', label: 'Settings', href: '/app/settings', owner: true },
];

function document(title: string, body: Html, head: Markup = ''): Html {
  return html`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex, nofollow">
<title>${title} · Quoting</title>
<link rel="stylesheet" href="${assetUrl('app.css')}">
<script src="${assetUrl('app.js')}" defer></script>
${head}
</head>
${body}
</html>`;
}

export function flashMessage(flash: Flash | null | undefined): Html {
  if (!flash) return html``;
  return flash.kind === 'ok'
    ? html`<div class="flash flash-ok" role="status">${flash.text}</div>`
    : html`<div class="flash flash-error" role="alert">${flash.text}</div>`;
}

export interface ShellOptions {
  title: string;
  section?: Section;
  flash?: Flash | null;
  content: Markup;
  /** More of the head: a page's own script, or a refresh for readers without script (`<noscript><meta …></noscript>`). */
  head?: Markup;
}

/** A signed-in page: the navigation, the workspace's name, the user and sign-out, the flash message, the content. */
export function shell(auth: Principal, { title, section, flash, content, head }: ShellOptions): Html {
  const workspace = auth.maybeWorkspace;
  const isOwner = auth.role === 'owner';
  const links = workspace
    ? sections
        .filter((s) => !s.owner || isOwner)
        .map((s) => html`<li><a href="${s.href}"${s.section === section ? html` aria-current="page"` : ''}>${s.label}</a></li>`)
    : [];
  return document(
    title,
    html`<body class="app">
<a class="skip" href="#main">Skip to content</a>
<header class="bar">
  <a class="brand" href="/app">${workspace?.name ?? 'Quoting'}</a>
  <nav aria-label="Main"><ul>${links}</ul></nav>
  <div class="who">
    <a href="/app/settings/account" class="user">${auth.user.name || auth.user.email}</a>
    <form method="post" action="/logout"><button type="submit" class="link">Sign out</button></form>
  </div>
</header>
<main id="main">
${flashMessage(flash)}
${content}
</main>
</body>`,
    head,
  );
}

/** A page outside the workspace (sign-in, reset, errors before a session is known): the same look, without navigation. */
export function bare(title: string, content: Markup, flash?: Flash | null): Html {
  return document(
    title,
    html`<body class="bare">
<main id="main" class="narrow">
<p class="brand-line"><a href="/" class="brand">Quoting</a></p>
${flashMessage(flash)}
${content}
</main>
</body>`,
  );
}
