import fs from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * The one renderer for everything in templates/: the public quote page (HTML), mails (text) and
 * the tracking tag (JavaScript). `{{name}}` placeholders are replaced in one pass, so an inserted
 * value is never scanned again, and a placeholder without a value throws: a typo in a template or
 * a caller fails loudly instead of printing nothing.
 */

const templatesDir = fileURLToPath(new URL('../../templates/', import.meta.url));
const cache = new Map<string, string>();

/** templates/<name>, read once per process. */
export function templateText(name: string): string {
  let text = cache.get(name);
  if (text === undefined) {
    text = fs.readFileSync(`${templatesDir}${name}`, 'utf8');
    cache.set(name, text);
  }
  return text;
}

/** Fills `{{name}}` placeholders with `format(value)`; a placeholder without a value throws. */
export function fill<V>(template: string, values: Record<string, V>, format: (value: V) => string): string {
  return template.replace(/\{\{\s*(\w+)\s*\}\}/g, (_, name: string) => {
    if (!Object.hasOwn(values, name)) throw new Error(`template placeholder {{${name}}} has no value`);
    return format(values[name]);
  });
}

const entities: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escapes text for HTML element content and quoted attribute values. */
export function escapeHtml(value: unknown): string {
  const text = String(value ?? '');
  // Most values have nothing to escape: testing first spares them the replace.
  return special.test(text) ? text.replace(/[&<>"']/g, (c) => entities[c]) : text;
}

const special = /[&<>"']/;

/** Markup produced by the renderer from a template: the one kind of value inserted without escaping. */
export class Html {
  constructor(readonly html: string) {}
}

export type HtmlValue = string | number | null | undefined | Html | Html[];

/** HTML: text is escaped, `Html` from another render is inserted as it is. */
export function renderHtml(template: string, values: Record<string, HtmlValue>): Html {
  return new Html(
    fill(template, values, (value) => {
      if (value instanceof Html) return value.html;
      if (Array.isArray(value)) return value.map((part) => part.html).join('');
      return escapeHtml(value);
    }),
  );
}

/**
 * A mail from templates/mail/<name>.txt: the first line is the subject, the rest the body. The
 * template is split before it is filled, so a value with a line break cannot move text between
 * subject and body; line breaks in the subject become spaces.
 */
export function renderMail(name: string, values: Record<string, string>): { subject: string; text: string } {
  const [subject, ...body] = templateText(`mail/${name}.txt`).split('\n');
  const asText = (value: string) => value;
  return {
    subject: fill(subject.replace(/^Subject:\s*/, ''), values, asText).replace(/\s+/g, ' ').trim(),
    text: fill(body.join('\n').trimStart(), values, asText),
  };
}

/**
 * JavaScript: each value is inserted as a JSON literal, with `<` and the line separators escaped so
 * that no value can end a script element or a string.
 */
export function renderScript(name: string, values: Record<string, unknown>): string {
  return fill(templateText(name), values, (value) =>
    JSON.stringify(value).replace(/</g, '\\u003c').replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029'),
  );
}

/** A value `html` inserts: text (escaped), markup from another render, or nothing (null, undefined, false). */
export type Markup = string | number | boolean | null | undefined | Html | readonly Markup[];

function markupText(value: Markup): string {
  if (typeof value === 'string') return escapeHtml(value);
  if (value instanceof Html) return value.html;
  if (Array.isArray(value)) {
    // Added up rather than joined: a page is copied flat once, as it is sent, not once for each list in it as well.
    let out = '';
    for (const part of value) out += markupText(part);
    return out;
  }
  if (value === null || value === undefined || value === false || value === true) return '';
  return escapeHtml(value);
}

/**
 * The app's templates (src/web/): a tagged template whose values are escaped unless they are `Html` from
 * another render, so markup written by hand is the only markup there is. Attribute values must be quoted.
 */
export function html(strings: TemplateStringsArray, ...values: Markup[]): Html {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += markupText(values[i]) + strings[i + 1];
  return new Html(out);
}
