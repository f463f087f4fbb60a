import type { Context } from 'koa';
import { html, type Html } from '../templates.js';
import type { Principal } from '../http/principal.js';
import { bare, shell } from './layout.js';

const headings: Record<number, string> = {
  400: 'That request was not understood',
  402: 'This workspace is locked',
  403: 'You may not do this',
  404: 'Page not found',
  405: 'Not allowed here',
  409: 'That cannot be done now',
  410: 'This link has expired',
  413: 'That is too large',
  422: 'Please check what you entered',
  429: 'Too many attempts',
  503: 'The service is unavailable',
};

const advice: Record<number, string> = {
  402: 'An owner of the workspace can reactivate it. Until then its pages and API are closed.',
  403: 'If you need this done, ask a workspace owner.',
  404: 'The page does not exist, or it belongs to a record you cannot see.',
  503: 'The database cannot be reached right now. Please try again in a moment.',
};

/**
 * The page for a failed request, in the app's style: the message a client may see (the API's own), and for a
 * server error only the request id, which the operator can find in the log.
 */
export function errorPage(_ctx: Context, auth: Principal, status: number, message: string, requestId: string): Html {
  const heading = headings[status] ?? (status >= 500 ? 'Something went wrong' : 'That did not work');
  const text = status >= 500 && status !== 503 ? 'Something went wrong on our side. Please try again; if it keeps happening, tell your administrator.' : message || advice[status] || '';
  const content = html`<section class="card message">
  <p class="status-code">Error ${status}</p>
  <h1>${heading}</h1>
  <p>${text}</p>
  ${status === 404 || status === 403 ? html`<p>${advice[status]}</p>` : ''}
  ${status >= 500 ? html`<p class="muted">Request id: <code>${requestId}</code></p>` : ''}
  <p><a class="button secondary" href="${auth.maybeWorkspace && status !== 402 ? '/app' : '/'}">Go to the start page</a></p>
  ${status === 402 ? html`<form method="post" action="/logout"><button type="submit" class="link">Sign out</button></form>` : ''}
</section>`;
  const title = `${heading}`;
  // The shell needs a user of an open workspace; a locked one (402) or an unknown caller gets the bare layout.
  return auth.maybeWorkspace && status !== 402 ? shell(auth, { title, content }) : bare(title, content);
}
