/** What every list page shares: the page number in the query, previous and next links with the total, a status badge. */
import { z } from 'zod';
import { html, type Html } from '../templates.js';
import { Forbidden, NotFound } from '../errors.js';

/** `?page=N`: a page number from 1; anything else reads as the first page. */
export const pageNumber = z.coerce.number().int().min(1).max(1_000_000).catch(1).default(1);

/** `?before=` or `?after=`: the id a page reached by its neighbour's link starts from; anything else is ignored. */
export const cursorId = z.coerce.number().int().min(1).max(2147483647).optional().catch(undefined);

/** Where the next and previous links of a page of these rows start: below its last row, above its first. */
export const cursorOf = (rows: readonly { id: number }[]): PageCursorIds => ({ first: rows[0]?.id, last: rows.at(-1)?.id });

export interface PageCursorIds {
  first?: number;
  last?: number;
}

/** The query string with some values changed (an empty or undefined value leaves its key out), keys in the query's order. */
export function withQuery(path: string, query: Record<string, unknown>, changes: Record<string, string | number | undefined> = {}): string {
  let text = '';
  for (const key in query) if (Object.hasOwn(query, key)) text = withParam(text, key, Object.hasOwn(changes, key) ? changes[key] : query[key]);
  for (const key in changes) if (Object.hasOwn(changes, key) && !Object.hasOwn(query, key)) text = withParam(text, key, changes[key]);
  return text ? `${path}?${text}` : path;
}

function withParam(text: string, key: string, value: unknown): string {
  if (value === undefined || value === null || value === '' || (key === 'page' && Number(value) === 1)) return text;
  return `${text ? `${text}&` : ''}${formEncoded(key)}=${formEncoded(String(value))}`;
}

/** What URLSearchParams writes for a name or value; most (ids, statuses, page numbers) are written as they are. */
const formEncoded = (text: string) => (plain.test(text) ? text : new URLSearchParams({ '': text }).toString().slice(1));

const plain = /^[\w.*-]*$/;

export interface PageOf {
  page: number;
  size: number;
  total: number;
}

/**
 * "51–100 of 230", with previous and next links that keep the filters. With the page's first and last ids (`cursor`),
 * the links say where their page starts, so a deep page costs what the first does.
 */
export function pager(path: string, query: Record<string, unknown>, { page, size, total }: PageOf, noun: string, cursor?: PageCursorIds): Html {
  const pages = Math.max(1, Math.ceil(total / size));
  const first = total === 0 ? 0 : Math.min(total, (page - 1) * size + 1);
  const last = Math.min(total, page * size);
  return html`<nav class="pager" aria-label="Pages">
  <span>${total === 0 ? `No ${noun}` : html`${first}&ndash;${last} of ${total} ${noun}`}${pages > 1 ? ` · page ${page} of ${pages}` : ''}</span>
  <span class="links">
    ${page > 1 ? html`<a class="button small" rel="prev" href="${withQuery(path, query, { page: Math.min(page - 1, pages), ...previousCursor(page, cursor) })}">Previous</a>` : ''}
    ${page < pages ? html`<a class="button small" rel="next" href="${withQuery(path, query, { page: page + 1, before: cursor?.last, after: undefined })}">Next</a>` : ''}
  </span>
</nav>`;
}

/** The previous page starts above this one's first row; page 1 is the plain list (new rows may have come). */
function previousCursor(page: number, cursor: PageCursorIds | undefined): Record<string, number | undefined> {
  return { before: undefined, after: page - 1 > 1 && cursor?.first !== undefined ? cursor.first : undefined };
}

/** A status as the badge the public page shows. */
export function badge(status: string, label?: string): Html {
  if (label !== undefined) return html`<span class="badge status-${status}">${label}</span>`;
  // A list shows a badge a row, of a few statuses: each is written once.
  let written = badges.get(status);
  if (!written) {
    written = html`<span class="badge status-${status}">${status.charAt(0).toUpperCase() + status.slice(1)}</span>`;
    if (badges.size < 100) badges.set(status, written);
  }
  return written;
}

const badges = new Map<string, Html>();

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
