import { inputIssues } from '../schema/parse.js';
import { columnIndex } from './csv.js';
import { generatedSku, renamed, type Format, type RowIssue } from './product-format.js';
import { productRow } from './schema.js';

/** The exporter's columns that no other format has; a WooCommerce file has Type, SKU and Name and one of these. */
const wooColumns = ['published', 'regular price', 'parent'];

export function isWooHeader(header: string[]): boolean {
  const index = columnIndex(header);
  return index.has('type') && index.has('sku') && index.has('name') && !index.has('product_sku') && wooColumns.some((c) => index.has(c));
}

const wooTypes = ['simple', 'variable', 'variation', 'grouped', 'external'] as const;
type WooType = (typeof wooTypes)[number];

/** Published as the exporter writes it (1 publish, 0 private, -1 draft, 2 pending), or true/false as its importer reads. */
const statuses = new Map([['1', 'active'], ['0', 'archived'], ['-1', 'draft'], ['2', 'draft'], ['true', 'active'], ['false', 'draft']]);

/** A product row of the file, remembered for the variation rows that name it in Parent. */
interface Parent {
  sku: string;
  line: number;
  type: WooType;
  /** A variable product's fields, which its variation rows carry (other products' rows carry their own, so keep none). */
  product?: Record<string, string | undefined>;
  /** Set on a variable product once a variation row names it. */
  named?: true;
  /** Set when the product's own row failed: its variations fail too. */
  failed?: true;
}

/** A cell as it was before the exporter's escaping for spreadsheets: the `'` it puts before a leading `=`, `+`, `-` or `@` comes off. */
const unescaped = (value: string) => (/^'[=+\-@]/.test(value) ? value.slice(1) : value);

/** A list cell (`Clothing > Tshirts, Clothing`): split at commas, `\,` being a comma inside a value. */
const listValues = (value: string) =>
  value
    .split(/(?<!\\),/)
    .map((part) => part.replace(/\\,/g, ',').trim())
    .filter(Boolean);

/** The exporter writes a description's line breaks as `\n` (and a `\n` of the text as `\\n`). */
const description = (value: string) => value.replace(/\\\\n|\\n/g, (escape) => (escape === '\\n' ? '\n' : '\\n'));

/** A price as the shop's locale wrote it: a decimal comma (`12,50`; the exporter writes no thousands separator) is a point. */
const price = (value: string) => (/^\d+,\d+$/.test(value) ? value.replace(',', '.') : value);

/**
 * A sale date, `2026-11-20 0:00:00` as the exporter writes it in the shop's time, read as UTC (the file gives no
 * time zone). A date alone starts at midnight and, as an end, lasts the whole day, as WooCommerce keeps them.
 */
function saleDate(value: string, end: boolean): Date | undefined | 'bad' {
  if (value === '') return undefined;
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{1,2}):(\d{2})(?::(\d{2}))?)?$/.exec(value);
  if (!m) return 'bad';
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const timed = m[4] !== undefined;
  const [hour, minute, second] = timed ? [Number(m[4]), Number(m[5]), Number(m[6] ?? 0)] : end ? [23, 59, 59] : [0, 0, 0];
  const date = new Date(Date.UTC(year, month - 1, day, hour, minute, second));
  const rolled = date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day || hour > 23 || minute > 59 || second > 59;
  return rolled ? 'bad' : date;
}

/**
 * WooCommerce's product exporter (Products → Export, English column names): a product a row, each variation of a
 * variable product a row naming it in Parent (`id:44` or its SKU) after it. Simple, grouped and external products are
 * a product with one variant of the same SKU; a variable product's own row gives the product and is skipped (its
 * variations are the variants). `now` is the time a sale's dates are read against: the import's start.
 */
export function wooFormat(header: string[], now: Date): Format {
  const index = columnIndex(header);
  const cell = (values: string[], name: string) => {
    const i = index.get(name);
    return i === undefined ? '' : unescaped((values[i] ?? '').trim());
  };
  /** [name column, value column] of each Attribute N. */
  const attributes = header
    .map((name) => /^attribute (\d+) name$/i.exec(name.trim())?.[1])
    .filter((n): n is string => n !== undefined)
    .map((n) => [`attribute ${n} name`, `attribute ${n} value(s)`] as const);
  const present = new Set<string>(['type', 'variant_name', 'attributes']);
  if (index.has('published')) present.add('status');
  if (index.has('categories')) present.add('category');
  if (index.has('brands')) present.add('brand');
  if (index.has('description') || index.has('short description')) present.add('description');
  if (index.has('regular price') || index.has('sale price')) present.add('price');
  const byId = new Map<string, Parent>();
  const bySku = new Map<string, Parent>();
  /** Variable products whose own row was good: skipped, and failed at the end when no variation named them. */
  const held: Parent[] = [];

  /** The price: Sale price while its dates (if any) hold `now`, else Regular price; the column it came from names its errors. */
  function chosenPrice(values: string[], errors: RowIssue[]): { price: string; column: string } {
    const from = saleDate(cell(values, 'date sale price starts'), false);
    const to = saleDate(cell(values, 'date sale price ends'), true);
    for (const [column, date] of [['Date sale price starts', from], ['Date sale price ends', to]] as const) {
      if (date === 'bad') errors.push({ field: column, message: `${column}: "${cell(values, column.toLowerCase())}" is not a date (YYYY-MM-DD, optionally with a time).` });
    }
    const sale = price(cell(values, 'sale price'));
    const onSale = sale !== '' && (!(from instanceof Date) || from <= now) && (!(to instanceof Date) || now <= to);
    return onSale ? { price: sale, column: 'Sale price' } : { price: price(cell(values, 'regular price')), column: 'Regular price' };
  }

  return {
    present,
    map(values, _products, line) {
      const flags = listValues(cell(values, 'type')).map((t) => t.toLowerCase());
      const named = flags.filter((t) => t !== 'virtual' && t !== 'downloadable');
      const type = (named[0] ?? 'simple') as WooType;
      const errors: RowIssue[] = [];
      const columns: Record<string, string> = { product_sku: 'SKU', variant_sku: 'SKU', name: 'Name', status: 'Published', category: 'Categories', description: 'Description' };
      const sku = cell(values, 'sku');
      const id = cell(values, 'id').replace(/^id:/i, '');
      if (named.length > 1 || !(wooTypes as readonly string[]).includes(type)) {
        errors.push({ field: 'Type', message: `Type: "${cell(values, 'type')}" is not one of ${wooTypes.join(', ')} (with virtual or downloadable).` });
        return { product_sku: sku || `id:${id}`, errors };
      }
      const { price: chosen, column } = chosenPrice(values, errors);
      columns.price = column;

      if (type === 'variation') {
        columns.product_sku = 'Parent';
        const reference = cell(values, 'parent');
        const parent = /^id:/i.test(reference) ? byId.get(reference.slice(3).trim()) : bySku.get(reference);
        if (!reference) errors.push({ field: 'Parent', message: 'Parent: empty; a variation names its variable product (id:44 or its SKU).' });
        else if (!parent) errors.push({ field: 'Parent', message: `Parent: no product ${reference} on an earlier line (a variation comes after its variable product).` });
        else if (parent.type !== 'variable') errors.push({ field: 'Parent', message: `Parent: ${reference} (line ${parent.line}) is a ${parent.type} product, not a variable one.` });
        else if (parent.failed) errors.push({ field: 'Parent', message: `Parent: product ${parent.sku} was not imported: its row (line ${parent.line}) failed.` });
        const productSku = parent?.sku ?? reference;
        if (parent?.type === 'variable') parent.named = true;
        // An attribute a variation leaves empty is "any": the variant does not have it.
        const given: [string, string][] = [];
        for (const [nameColumn, valueColumn] of attributes) {
          const name = cell(values, nameColumn);
          const value = cell(values, valueColumn).replace(/\\,/g, ',');
          if (name && value) given.push([name, value]);
        }
        const shown = given.map(([, value]) => value);
        const variant = {
          product_sku: productSku,
          variant_sku: sku || generatedSku([productSku, ...shown]),
          variant_name: shown.join(' / '),
          attributes: Object.fromEntries(given),
          ...(present.has('price') ? { price: chosen } : {}),
        };
        return {
          product_sku: productSku, product: parent?.product, variant, columns,
          ...(sku ? {} : { generatedFrom: "the parent's SKU and the attribute values" }),
          ...(errors.length ? { errors } : {}),
        };
      }

      // A product row: simple, variable, grouped or external.
      const productSku = sku || (id ? `id:${id}` : '');
      if (!productSku) errors.push({ field: 'SKU', message: 'SKU: empty, and the row has no ID to name the product by.' });
      const published = cell(values, 'published').toLowerCase();
      const status = published === '' ? '' : statuses.get(published);
      if (status === undefined) errors.push({ field: 'Published', message: `Published: "${cell(values, 'published')}" is not one of 1 (published), 0 (private), -1 (draft), 2 (pending).` });
      const product: Record<string, string | undefined> = {
        name: cell(values, 'name'),
        type: flags.includes('downloadable') ? 'digital' : flags.includes('virtual') ? 'service' : 'physical',
        status: status ?? '',
        category: listValues(cell(values, 'categories'))[0]?.split('>').map((part) => part.trim()).filter(Boolean).pop() ?? '',
        brand: listValues(cell(values, 'brands'))[0] ?? '',
        description: description(cell(values, 'description')) || description(cell(values, 'short description')),
      };
      const parent: Parent = { sku: productSku, line, type, ...(type === 'variable' ? { product } : {}) };
      if (id) byId.set(id, parent);
      if (productSku) bySku.set(productSku, parent);

      if (type === 'variable') {
        const checked = inputIssues(productRow, product);
        if (!checked.ok) for (const issue of checked.issues) errors.push(renamed(issue, columns));
        if (errors.length) {
          parent.failed = true;
          return { product_sku: productSku, product, errors, columns };
        }
        held.push(parent);
        return null;
      }
      // A simple product's attributes describe it: each is kept with its values as the shop lists them.
      const given: [string, string][] = [];
      for (const [nameColumn, valueColumn] of attributes) {
        const name = cell(values, nameColumn);
        const value = listValues(cell(values, valueColumn)).join(', ');
        if (name && value) given.push([name, value]);
      }
      const notes: RowIssue[] = [];
      if (type === 'grouped') {
        const children = listValues(cell(values, 'grouped products'));
        notes.push({ field: 'Type', message: `Type: a grouped product, imported as a single product; the products it groups${children.length ? ` (${children.join(', ')})` : ''} are not linked to it.` });
      } else if (type === 'external') {
        const url = cell(values, 'external url');
        notes.push({ field: 'Type', message: `Type: an external product, imported as a single product; its External URL${url ? ` (${url})` : ''} is not kept.` });
      }
      const variant = {
        product_sku: productSku,
        variant_sku: productSku,
        variant_name: '',
        attributes: Object.fromEntries(given),
        ...(present.has('price') ? { price: chosen } : {}),
      };
      return { product_sku: productSku, product, variant, columns, ...(errors.length ? { errors } : {}), ...(notes.length ? { notes } : {}) };
    },
    finish() {
      const errors: (RowIssue & { row: number })[] = [];
      for (const parent of held) {
        if (!parent.named) errors.push({ row: parent.line, field: 'Type', message: `Type: variable product ${parent.sku} has no variation rows in the file, so it was not imported.` });
      }
      return errors;
    },
  };
}
