/** A small HTTP client with a cookie jar, over Node's fetch; never follows redirects. */
export interface Response<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  json?: unknown;
  form?: Record<string, string>;
  raw?: string;
  contentType?: string;
  headers?: Record<string, string>;
  /** Aborts the request (the client going away mid-request); the call then rejects. */
  signal?: AbortSignal;
}

export class Client {
  readonly cookies = new Map<string, string>();

  constructor(readonly baseUrl: string) {}

  async request<T = any>(method: string, path: string, options: RequestOptions = {}): Promise<Response<T>> {
    const headers: Record<string, string> = { ...options.headers };
    let body: string | undefined;
    if (options.json !== undefined) {
      body = JSON.stringify(options.json);
      headers['content-type'] ??= 'application/json';
    } else if (options.form) {
      body = new URLSearchParams(options.form).toString();
      headers['content-type'] ??= 'application/x-www-form-urlencoded';
    } else if (options.raw !== undefined) {
      body = options.raw;
      headers['content-type'] ??= options.contentType ?? 'application/json';
    }
    if (this.cookies.size && !headers.cookie) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const res = await fetch(this.baseUrl + path, { method, headers, body, redirect: "manual", signal: options.signal }).catch((e) => { throw new Error(`fetch ${method} ${path}: ${e.cause?.code} ${e.cause?.message}`); });
    for (const cookie of res.headers.getSetCookie()) {
      const [pair] = cookie.split(';');
      const [name, ...value] = pair.split('=');
      const expired = /max-age=0|expires=thu, 01 jan 1970/i.test(cookie) || value.join('=') === '';
      if (expired) this.cookies.delete(name.trim());
      else this.cookies.set(name.trim(), value.join('='));
    }
    const text = await res.text();
    let parsed: unknown = undefined;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    return { status: res.status, headers: res.headers, body: parsed as T, text };
  }

  get = <T = any>(path: string, options?: RequestOptions) => this.request<T>('GET', path, options);
  post = <T = any>(path: string, json?: unknown, options?: RequestOptions) => this.request<T>('POST', path, { json, ...options });
  put = <T = any>(path: string, json?: unknown, options?: RequestOptions) => this.request<T>('PUT', path, { json, ...options });
  patch = <T = any>(path: string, json?: unknown, options?: RequestOptions) => this.request<T>('PATCH', path, { json, ...options });
  delete = <T = any>(path: string, options?: RequestOptions) => this.request<T>('DELETE', path, options);
}

/** The `data` of an answer that came with `status` (200 unless given); otherwise throws, saying what came instead. */
export async function ok(res: Promise<Pick<Response, 'status' | 'text' | 'body'>>, status = 200): Promise<any> {
  const answer = await res;
  if (answer.status !== status) throw new Error(`expected ${status}, got ${answer.status}: ${answer.text}`);
  return answer.body.data;
}
