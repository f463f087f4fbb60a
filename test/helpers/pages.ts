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
    .replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, '&')
    .replace(/\s+/g, ' ')
    .trim();
}
