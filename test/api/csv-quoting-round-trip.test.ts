import { Readable } from 'node:stream';
import assert from 'node:assert/strict';
import test from 'ava';
import fc from 'fast-check';
import { openCsv, rowsAtMost } from '../../src/imports/csv.js';
import { useOwnerApp } from '../helpers/fixture.js';

/**
 * Property-based: valid values (commas, quotes, line breaks, tabs, unicode, spaces at either end inside quotes),
 * written with random quoting (quoted or not where a spreadsheet may leave a cell unquoted), spaces and tabs before
 * an opening and after a closing quote, LF, CRLF or CR line endings (mixed in one file too), blank lines, a trailing line break or none, a
 * BOM or none, the delimiter `,`, `;` or tab, read back as they were written: by the import's reader (openCsv, the
 * bytes cut into random chunks), each row named by the line it starts on, and counted as a row by the row limit's
 * count before an import (a cell's own lines are not rows); and through POST /products/import, each
 * stored as the API stores the same value (trimmed). `FC_RUNS`, `FC_SEED` reproduce or deepen a run.
 */

const { owner } = useOwnerApp(test);

/** A fixed seed, so a run is repeatable; a failure prints it with the shrunk counterexample (FC_SEED overrides it). */
const seed = process.env.FC_SEED ? Number(process.env.FC_SEED) : 20261128;
const runs = (fallback: number) => Number(process.env.FC_RUNS ?? fallback);

/** Characters a hand-written export holds that matter to a CSV reader, and unicode that must pass untouched. */
const tricky = ['"', '""', ',', ';', '\t', ' ', '  ', '\n', '\r\n', '\r', 'é', 'ß', '日本', '💥', '👩‍👩‍👧', 'e\u0301', '\u00a0', '\u2028', '\uFEFF', "'", '\\', '#', '='];

/** Any value a cell may hold: the parser must give it back exactly. */
const anyValue = fc.oneof(
  fc.string({ unit: fc.constantFrom(...tricky, 'a', 'b', 'Z', '1', '.'), maxLength: 12 }),
  fc.string({ unit: 'grapheme', maxLength: 10 }),
  fc.tuple(fc.constantFrom(' ', '  ', '\t', '\n', ''), fc.string({ unit: 'grapheme-ascii', maxLength: 8 }), fc.constantFrom(' ', '\t ', '\r\n', '')).map(([a, b, c]) => a + b + c),
);

/** A single-line value (a name): no control character, line or paragraph separator. */
const lineValue = fc
  .string({ unit: fc.constantFrom('"', ',', ';', ' ', 'é', '日本', '💥', 'e\u0301', '\u00a0', "'", 'a', 'b', 'Z', '1'), minLength: 1, maxLength: 14 })
  .filter((v) => v.trim() !== '');

/** A free-text value (a description): line breaks and tabs allowed. */
const textValue = fc.string({ unit: fc.constantFrom(...tricky.filter((c) => c !== '\uFEFF'), 'a', 'b', 'Z', '1'), maxLength: 16 });

interface Layout {
  delimiter: ',' | ';' | '\t';
  /** `mixed`: each line ends with one of the three, as `mixes` picks (a file edited on two systems). */
  newline: '\n' | '\r\n' | '\r' | 'mixed';
  mixes: number[];
  bom: boolean;
  trailingNewline: boolean;
}

const layout: fc.Arbitrary<Layout> = fc.record({
  delimiter: fc.constantFrom(',', ';', '\t'),
  newline: fc.constantFrom('\n', '\r\n', '\r', 'mixed'),
  mixes: fc.array(fc.nat(2), { minLength: 1, maxLength: 12 }),
  bom: fc.boolean(),
  trailingNewline: fc.boolean(),
});

/** The line endings after each of `lines` lines; a blank line ends as the line before it (CR, blank, LF would be one CRLF). */
function lineEndings(lines: string[], l: Layout): string[] {
  const endings: string[] = [];
  lines.forEach((line, k) => {
    const picked = l.newline === 'mixed' ? ['\n', '\r\n', '\r'][l.mixes[k % l.mixes.length]] : l.newline;
    endings.push(line === '' && k > 0 ? endings[k - 1] : picked);
  });
  return endings;
}

/** How one cell is written: quoted or not (when it may be left unquoted), whitespace before and after its quotes. */
const cellStyle: fc.Arbitrary<CellStyle> = fc.record({
  quote: fc.boolean(),
  before: fc.constantFrom('', '', ' ', '  ', '\t'),
  after: fc.constantFrom('', '', ' ', '   ', '\t', ' \t'),
});
/** `tail`: text written after the closing quote (a row error). */
type CellStyle = { quote: boolean; before: string; after: string; tail?: string };

/**
 * Whether a spreadsheet may write the value unquoted and it still reads back as itself: no delimiter, line break or
 * quote at its start, and nothing the reader trims at either end.
 */
function mayBeBare(value: string, delimiter: string): boolean {
  return value !== '' && !value.includes(delimiter) && !/[\r\n]/.test(value) && !/^[\s"]|\s$/.test(value) && !value.startsWith('\uFEFF');
}

function writeCell(value: string, style: CellStyle, delimiter: string): string {
  if (style.tail !== undefined) return `"${value.replace(/"/g, '""')}"${style.tail}`;
  if (!style.quote && mayBeBare(value, delimiter)) return value;
  // A tab is whitespace around a quoted cell, unless it is the delimiter.
  const space = (s: string) => (delimiter === '\t' ? s.replace(/\t/g, ' ') : s);
  return `${space(style.before)}"${value.replace(/"/g, '""')}"${space(style.after)}`;
}

interface Written {
  text: string;
  /** The line each row starts on (the header is line 1). */
  lines: number[];
}

/** The file, with blank lines where `blank` says (after the header and after row i), and the line each row starts on. */
function writeFile(header: string[], rows: string[][], styles: CellStyle[][], blank: boolean[], l: Layout): Written {
  // No tab pads the header: the header line's most frequent of `,` `;` tab is the delimiter.
  const headerStyle = (s: CellStyle) => ({ ...s, before: s.before.replace(/\t/g, ' '), after: s.after.replace(/\t/g, ' ') });
  const out: string[] = [header.map((name, i) => writeCell(name, headerStyle(styles[0][i]), l.delimiter)).join(l.delimiter)];
  const lines: number[] = [];
  let line = 1;
  const breaks = (s: string) => (s.match(/\r\n|\r|\n/g) ?? []).length;
  rows.forEach((row, r) => {
    if (blank[r]) {
      out.push('');
      line++;
    }
    line++;
    lines.push(line);
    const written = row.map((v, i) => writeCell(v, styles[r + 1][i], l.delimiter)).join(l.delimiter);
    line += breaks(written);
    out.push(written);
  });
  const endings = lineEndings(out, l);
  const text = out.map((line, k) => line + (k < out.length - 1 || l.trailingNewline ? endings[k] : '')).join('');
  return { text: (l.bom ? '\uFEFF' : '') + text, lines };
}

/** The bytes in chunks cut at the given points (inside a character, a CRLF or a quote pair, as a network delivers them). */
function chunked(bytes: Buffer, cuts: number[]): Readable {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const chunks: Buffer[] = [];
  let from = 0;
  for (const point of [...points, bytes.length]) {
    if (point > from) chunks.push(bytes.subarray(from, point));
    from = point;
  }
  return Readable.from(chunks);
}

const sample = fc
  .record({ columns: fc.integer({ min: 2, max: 5 }), rowCount: fc.integer({ min: 1, max: 8 }) })
  .chain(({ columns, rowCount }) =>
    fc.record({
      header: fc.uniqueArray(fc.stringMatching(/^[a-z][a-z0-9_]{0,7}$/), { minLength: columns, maxLength: columns }),
      // The first cell names its row: a row whose cells are all blank is skipped, as documented.
      rows: fc.array(fc.tuple(fc.stringMatching(/^[A-Za-z0-9-]{1,6}$/), fc.array(anyValue, { minLength: columns - 1, maxLength: columns - 1 })).map(([key, rest]) => [key, ...rest]), {
        minLength: rowCount,
        maxLength: rowCount,
      }),
      styles: fc.array(fc.array(cellStyle, { minLength: columns, maxLength: columns }), { minLength: rowCount + 1, maxLength: rowCount + 1 }),
      blank: fc.array(fc.boolean(), { minLength: rowCount, maxLength: rowCount }),
      layout,
      cuts: fc.array(fc.nat(), { maxLength: 6 }),
    }),
  );

test('the import reader gives back every valid value as written, however it was quoted, spaced, ended and cut; the row limit counts its rows', async (t) => {
  await fc.assert(
    fc.asyncProperty(sample, async ({ header, rows, styles, blank, layout: l, cuts }) => {
      const { text, lines } = writeFile(header, rows, styles, blank, l);
      const csv = await openCsv(chunked(Buffer.from(text), cuts));
      const read = [];
      for await (const row of csv.rows) read.push(row);
      const shown = JSON.stringify(text);
      assert.deepEqual(csv.header, header, shown);
      assert.deepEqual(read.map((r) => r.values), rows, shown);
      assert.deepEqual(read.map((r) => r.line), lines, shown);
      assert.ok(read.every((r) => !r.badQuote && !r.oversized), shown);
      // The row limit's count before an import: the rows and the blank lines, never a cell's own lines.
      assert.equal(await rowsAtMost(chunked(Buffer.from(text), cuts)), rows.length + blank.filter(Boolean).length, shown);
    }),
    { numRuns: runs(150), seed },
  );
  t.pass(`seed ${seed}`);
});

test('text after a closing quote is a row error naming its line and column, whatever the layout; the other rows read as written', async (t) => {
  await fc.assert(
    // A tail neither starts with a quote (that would be an escaped quote) or whitespace, nor holds a delimiter or line break.
    fc.asyncProperty(sample, fc.nat(), fc.constantFrom('x', 'x"', 'y z', 'ab"c"', '日本'), async ({ header, rows, styles, blank, layout: l, cuts }, pick, tail) => {
      const bad = pick % rows.length;
      const column = pick % header.length;
      styles[bad + 1][column] = { ...styles[bad + 1][column], tail };
      const { text, lines } = writeFile(header, rows, styles, blank, l);
      const csv = await openCsv(chunked(Buffer.from(text), cuts));
      const read = [];
      for await (const row of csv.rows) read.push(row);
      const shown = JSON.stringify(text);
      assert.deepEqual(read.map((r) => r.line), lines, shown);
      read.forEach((r, i) => {
        if (i === bad) assert.deepEqual([r.badQuote, r.values], [header[column], []], shown);
        else assert.deepEqual([r.badQuote, r.values], [undefined, rows[i]], shown);
      });
      assert.equal(await rowsAtMost(chunked(Buffer.from(text), cuts)), rows.length + blank.filter(Boolean).length, shown);
    }),
    { numRuns: runs(100), seed },
  );
  t.pass(`seed ${seed}`);
});

/** What the API stores for a value: trimmed, null when empty (the same rules as POST /products). */
const stored = (value: string) => (value.trim() === '' ? null : value.trim());

test.serial('values imported through POST /products/import are stored as the API stores them, never with their quoting', async (t) => {
  let n = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.record({ name: lineValue, brand: lineValue, description: textValue, nameStyle: cellStyle, brandStyle: cellStyle, descriptionStyle: cellStyle, skuStyle: cellStyle }), { minLength: 1, maxLength: 6 }),
      layout,
      async (products, l) => {
        const run = ++n;
        const sku = (i: number) => `RT-${run}-${i}`;
        const header = ['product_sku', 'name', 'brand', 'description', 'variant_sku'];
        const headerStyles = header.map(() => ({ quote: false, before: '', after: '' }));
        const rows = products.map((p, i) => [sku(i), p.name, p.brand, p.description, `${sku(i)}-V`]);
        const styles = [headerStyles, ...products.map((p) => [p.skuStyle, p.nameStyle, p.brandStyle, p.descriptionStyle, p.skuStyle])];
        const { text } = writeFile(header, rows, styles, products.map(() => false), l);
        const res = await owner.client.request('POST', '/api/v1/products/import', { raw: text, contentType: 'text/csv' });
        assert.equal(res.status, 200, `${res.text} ${JSON.stringify(text)}`);
        assert.deepEqual(res.body.data.import.errors, [], JSON.stringify(text));
        for (const [i, p] of products.entries()) {
          const list = await owner.client.get(`/api/v1/products?q=${encodeURIComponent(sku(i))}`);
          const product = list.body.data.products.find((x: { sku: string }) => x.sku === sku(i));
          assert.deepEqual([product?.name, product?.brand, product?.description], [p.name.trim(), stored(p.brand), stored(p.description)], JSON.stringify(text));
        }
      },
    ),
    { numRuns: runs(20), seed },
  );
  t.pass(`seed ${seed}`);
});
