import type { Context } from 'koa';

/** A message for the page after a redirect: what was done, or why it was not. */
export interface Flash {
  kind: 'ok' | 'error';
  text: string;
}

const FLASH_COOKIE = 'quoting_flash';
const MAX_TEXT = 300;

/** Kept in a short-lived cookie until the next page shows it; the text is shown escaped, like any other value. */
export function setFlash(ctx: Context, flash: Flash): void {
  const value = encodeURIComponent(`${flash.kind}:${flash.text.slice(0, MAX_TEXT)}`);
  ctx.cookies.set(FLASH_COOKIE, value, { httpOnly: true, sameSite: 'lax', secure: ctx.secure, path: '/', maxAge: 60_000, overwrite: true });
}

/** The message left for this page, which it then removes. */
export function takeFlash(ctx: Context): Flash | null {
  const value = ctx.cookies.get(FLASH_COOKIE);
  if (!value) return null;
  ctx.cookies.set(FLASH_COOKIE, null, { httpOnly: true, sameSite: 'lax', secure: ctx.secure, path: '/', overwrite: true });
  let text: string;
  try {
    text = decodeURIComponent(value);
  } catch {
    return null;
  }
  const match = /^(ok|error):([\s\S]*)$/.exec(text);
  return match ? { kind: match[1] as Flash['kind'], text: match[2].slice(0, MAX_TEXT) } : null;
}
