import { html, type Html, type Markup } from '../templates.js';
import type { Validation } from '../errors.js';

/** A form's messages by field name (`email`, `lines.2.price`), as the services' 422s name them. */
export type FieldErrors = Record<string, string>;

/** The 422's message under its field's name, for the form to show beside that field. */
export const fieldErrors = (error: Validation | null | undefined): FieldErrors => (error ? { [error.field]: error.message } : {});

/** A form field's value as sent (the first, for a repeated name), or ''. */
export function formText(form: Record<string, unknown>, name: string): string {
  const value = form[name];
  if (Array.isArray(value)) return typeof value[0] === 'string' ? value[0] : '';
  return typeof value === 'string' ? value : value === undefined || value === null ? '' : String(value);
}

/** A repeated field's values in order (`sku` on every line row), as sent. */
export function formList(form: Record<string, unknown>, name: string): string[] {
  const value = form[name];
  if (Array.isArray(value)) return value.map((v) => (typeof v === 'string' ? v : ''));
  return typeof value === 'string' ? [value] : [];
}

/** The form's text fields with empty ones left out: an empty optional input means "not given", as in the API. */
export function given(form: Record<string, unknown>, names: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of names) {
    const value = formText(form, name).trim();
    if (value !== '') out[name] = value;
  }
  return out;
}

export interface FieldOptions {
  name: string;
  label: string;
  value?: string | number | null;
  errors?: FieldErrors;
  /** The name the services' messages use for this field, when it differs from the input's name. */
  errorKey?: string;
  type?: string;
  required?: boolean;
  autocomplete?: string;
  hint?: Markup;
  attrs?: Html;
  id?: string;
}

function describedBy(id: string, error: string | undefined, hint: Markup): Html {
  const ids = [error ? `${id}-error` : '', hint ? `${id}-hint` : ''].filter(Boolean).join(' ');
  return ids ? html` aria-describedby="${ids}"` : html``;
}

function fieldFooter(id: string, error: string | undefined, hint: Markup): Html {
  return html`${hint ? html`<p class="hint" id="${id}-hint">${hint}</p>` : ''}${error ? html`<p class="field-error" id="${id}-error">${error}</p>` : ''}`;
}

/** A labelled input with its message beside it (aria-invalid, aria-describedby) after a 422. */
export function field(o: FieldOptions): Html {
  const id = o.id ?? `f-${o.name}`;
  const error = o.errors?.[o.errorKey ?? o.name];
  return html`<div class="field${error ? ' invalid' : ''}">
  <label for="${id}">${o.label}${o.required ? '' : html` <span class="optional">(optional)</span>`}</label>
  <input id="${id}" name="${o.name}" type="${o.type ?? 'text'}" value="${o.value ?? ''}"${o.required ? html` required` : ''}${o.autocomplete ? html` autocomplete="${o.autocomplete}"` : ''}${error ? html` aria-invalid="true"` : ''}${describedBy(id, error, o.hint)}${o.attrs ?? ''}>
  ${fieldFooter(id, error, o.hint)}
</div>`;
}

export function textarea(o: FieldOptions & { rows?: number }): Html {
  const id = o.id ?? `f-${o.name}`;
  const error = o.errors?.[o.errorKey ?? o.name];
  return html`<div class="field${error ? ' invalid' : ''}">
  <label for="${id}">${o.label}${o.required ? '' : html` <span class="optional">(optional)</span>`}</label>
  <textarea id="${id}" name="${o.name}" rows="${o.rows ?? 4}"${error ? html` aria-invalid="true"` : ''}${describedBy(id, error, o.hint)}>${o.value ?? ''}</textarea>
  ${fieldFooter(id, error, o.hint)}
</div>`;
}

export function select(o: FieldOptions & { options: { value: string; label: string }[] }): Html {
  const id = o.id ?? `f-${o.name}`;
  const error = o.errors?.[o.errorKey ?? o.name];
  const current = String(o.value ?? '');
  return html`<div class="field${error ? ' invalid' : ''}">
  <label for="${id}">${o.label}${o.required ? '' : html` <span class="optional">(optional)</span>`}</label>
  <select id="${id}" name="${o.name}"${error ? html` aria-invalid="true"` : ''}${describedBy(id, error, o.hint)}${o.attrs ?? ''}>
    ${o.options.map((opt) => html`<option value="${opt.value}"${opt.value === current ? html` selected` : ''}>${opt.label}</option>`)}
  </select>
  ${fieldFooter(id, error, o.hint)}
</div>`;
}

/** The message of a 422 whose field the form does not show: at the top of the form. */
export function formProblem(errors: FieldErrors, shown: readonly string[]): Html {
  const other = Object.entries(errors).filter(([name]) => !shown.includes(name));
  return other.length ? html`<div class="flash flash-error" role="alert">${other.map(([, message]) => html`<p>${message}</p>`)}</div>` : html``;
}
