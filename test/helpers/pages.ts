import type { Client, Response } from './client.js';

/** Form fields as a browser sends them: a repeated name (one per line row) as several values, in order. */
export type FormFields = Record<string, string | string[]>;

export function formBody(fields: FormFields): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(fields)) {
    for (const one of Array.isArray(value) ? value : [value]) params.append(name, one);
  }
  return params.toString();
}

/** POSTs a form as the browser does, with this site's Origin unless another is given. */
export function postForm(client: Client, path: string, fields: FormFields, options: { origin?: string } = {}): Promise<Response> {
  return client.request('POST', path, {
    raw: formBody(fields),
    contentType: 'application/x-www-form-urlencoded',
    headers: { origin: options.origin ?? new URL(client.baseUrl).origin },
  });
}

/** Signs in through the sign-in page; the client then holds the session cookie. */
export async function signInPage(client: Client, email: string, password: string): Promise<void> {
  const res = await postForm(client, '/login', { email, password });
  if (res.status !== 303) throw new Error(`sign-in failed: ${res.status} ${res.text.slice(0, 300)}`);
}

/** The page's visible text, tags removed and whitespace collapsed, for asserting what a person reads. */
export function visibleText(html: string): string {
  return html
    .replace(/<(script|style)[\s\S]*?<\/\1>/g, ' ')
    .replace(/<[^>]+>/g, ' ')
    .replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&ndash;/g, '–').replace(/&amp;/g, '&')
    .replace(/\s+/g, ' ')
    .trim();
}

/** GET a page that must answer `status` (200 unless given); otherwise throws, saying what came instead. */
export async function getPage(client: Client, path: string, status = 200): Promise<Response> {
  const res = await client.get(path);
  if (res.status !== status) throw new Error(`GET ${path}: expected ${status}, got ${res.status}: ${res.text.slice(0, 500)}`);
  return res;
}

/** The visible text of the table row that links to `href`. */
export function rowText(html: string, href: string): string {
  const row = html.split('<tr>').find((r) => r.includes(`href="${href}"`));
  return row ? visibleText(row.split('</tr>')[0]) : '';
}

/**
 * A client of its own signed in through the sign-in page: a flash message a POST leaves is this client's alone while
 * other tests of the file run.
 */
export async function ownSession(app: { client(): Client }, who: { email: string; password: string }): Promise<Client> {
  const client = app.client();
  await signInPage(client, who.email, who.password);
  return client;
}
