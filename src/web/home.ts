/** The home page, /app: what needs the salesperson's attention today. */
import { html } from '../templates.js';
import type { AppDeps } from '../http/deps.js';
import { page, type PageDef } from './page.js';
import { shell } from './layout.js';

export function homePages(_deps: AppDeps): PageDef[] {
  return [
    page({
      method: 'get', path: '/app', who: 'member',
      handle: async ({ auth, flash }) =>
        shell(auth, {
          title: 'Home',
          section: 'home',
          flash,
          content: html`<div class="page-head"><h1>${auth.workspace.name}</h1><a class="button primary" href="/app/quotes/new">New quote</a></div>`,
        }),
    }),
  ];
}
