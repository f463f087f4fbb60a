/** What every list page shares: the page number in the query, previous and next links with the total, a status badge. */
import { z } from 'zod';
import { html, type Html } from '../templates.js';
import { Forbidden, NotFound } from '../errors.js';

/** `?page=N`: a page number from 1; anything else reads as the first page. */
export const pageNumber = z.coerce.number().int().min(1).max(1_000_000).catch(1).default(1);

/** The query string with some values changed (an empty or undefined value leaves its key out). */
export function withQuery(path: string, query: Record<string, unknown>, changes: Record<string, string | number | undefined> = {}): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries({ ...query, ...changes })) {
    if (value === undefined || value === null || value === '' || (key === 'page' && Number(value) === 1)) continue;
    params.set(key, String(value));
  }
  const text = params.toString();
  return text ? `${path}?${text}` : path;
}

export interface PageOf {
  page: number;
  size: number;
  total: number;
}

/** "51–100 of 230", with previous and next links that keep the filters. */
export function pager(path: string, query: Record<string, unknown>, { page, size, total }: PageOf, noun: string): Html {
  const pages = Math.max(1, Math.ceil(total / size));
  const first = total === 0 ? 0 : Math.min(total, (page - 1) * size + 1);
  const last = Math.min(total, page * size);
  return html`<nav class="pager" aria-label="Pages">
  <span>${total === 0 ? `No ${noun}` : `${first}–${last} of ${total} ${noun}`}${pages > 1 ? ` · page ${page} of ${pages}` : ''}</span>
  <span class="links">
    ${page > 1 ? html`<a class="button small" rel="prev" href="${withQuery(path, query, { page: Math.min(page - 1, pages) })}">Previous</a>` : ''}
    ${page < pages ? html`<a class="button small" rel="next" href="${withQuery(path, query, { page: page + 1 })}">Next</a>` : ''}
  </span>
</nav>`;
}

/** A status as the badge the public page shows. */
export const badge = (status: string, label = status.charAt(0).toUpperCase() + status.slice(1)) => html`<span class="badge status-${status}">${label}</span>`;

/**
 * A record the caller's channel roles do not let them read is, to a page, a record that is not there: the 404 page,
 * as for another workspace's record (the API says 403; a page does not confirm that it exists).
 */
export async function visible<T>(read: Promise<T>): Promise<T> {
  try {
    return await read;
  } catch (err) {
    if (err instanceof Forbidden) throw new NotFound('There is no such record.');
    throw err;
  }
}
