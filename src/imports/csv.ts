import { pipeline, Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { parse, type Options, type Parser } from 'csv-parse';
import { HttpError, Validation } from '../errors.js';

/** Spec §8: 20 MB per file (413 above), 50,000 rows (422 above). */
export const MAX_IMPORT_BYTES = 20 * 1024 * 1024;
export const MAX_IMPORT_ROWS = 50_000;

export class TooLarge extends HttpError {
  constructor() {
    super(413, `The file is larger than ${MAX_IMPORT_BYTES / 1024 / 1024} MB; split it into smaller files.`);
  }
}

export interface CsvRow {
  /** The line number a spreadsheet shows for this row (the header is line 1). */
  line: number;
  values: string[];
}

export interface CsvFile {
  /** Header cells as written, trimmed. */
  header: string[];
  rows: AsyncIterable<CsvRow>;
  /** Bytes read so far (for progress). */
  bytesRead(): number;
}

/** The bytes of a body or file, however they arrive. */
export type ByteSource = AsyncIterable<Buffer | string> | Readable;

/**
 * Opens a CSV stream: the header line is read first and decides the delimiter (`,`, `;` or tab,
 * whichever it holds most often outside quotes), then csv-parse reads the rest record by record,
 * so only one batch of rows is ever held. A UTF-8 BOM, CRLF, quoted fields with commas, quotes and
 * newlines are handled by csv-parse; empty lines and rows whose cells are all empty are skipped (and counted as lines).
 * More than MAX_IMPORT_BYTES throws TooLarge, more than MAX_IMPORT_ROWS a 422; both stop reading.
 */
export async function openCsv(source: ByteSource): Promise<CsvFile> {
  let bytes = 0;
  const chunks = limited(source, (n) => (bytes = n));
  const head: Buffer[] = [];
  const scan = new HeaderScan();
  while (scan.line === undefined) {
    const next = await chunks.next();
    if (next.done) {
      scan.finish();
      break;
    }
    head.push(next.value);
    scan.push(next.value);
  }
  const headerLine = (scan.line ?? '').replace(/^\uFEFF/, '');
  if (headerLine.trim() === '') throw new Validation('file', 'file: the CSV is empty; its first line must name the columns.');
  const delimiter = detectDelimiter(headerLine);

  async function* all(): AsyncGenerator<Buffer> {
    yield* head;
    for (let next = await chunks.next(); !next.done; next = await chunks.next()) yield next.value;
  }
  const parser: Parser = parse(csvOptions(delimiter));
  const input = Readable.from(all());
  // pipeline destroys both sides on an error either way: a size error reaches the reader of `parser`.
  pipeline(input, parser, () => undefined);

  const iterator = parser[Symbol.asyncIterator]() as AsyncIterator<string[]>;
  let header: string[] | undefined;
  const first = await nextRecord(iterator);
  if (first.done) throw new Validation('file', 'file: the CSV is empty; its first line must name the columns.');
  header = first.value.map((cell) => cell.trim());

  async function* rows(): AsyncGenerator<CsvRow> {
    let count = 0;
    /** Records read, the header and empty lines included: a record's number is the line a spreadsheet shows. */
    let line = 1;
    try {
      for (let next = await nextRecord(iterator); !next.done; next = await nextRecord(iterator)) {
        const record = next.value;
        line++;
        if (record.every((cell) => cell.trim() === '')) continue;
        if (++count > MAX_IMPORT_ROWS) {
          throw new Validation('file', `file: the CSV has more than ${MAX_IMPORT_ROWS} rows; split it into smaller files.`);
        }
        yield { line, values: record };
      }
    } finally {
      if (!parser.destroyed) parser.destroy();
      if (!input.destroyed) input.destroy();
    }
  }
  return { header, rows: rows(), bytesRead: () => bytes };
}

/**
 * csv-parse's options for an import (exported for the benchmark, which times csv-parse alone with them).
 * Empty lines are not skipped by the parser but by the reader, which counts every record itself: csv-parse's
 * `info` (its own counts) costs an object per record, a fifth of its time on a 50,000-row file.
 */
export function csvOptions(delimiter: string): Options {
  return { delimiter, bom: true, skip_empty_lines: false, relax_column_count: true, relax_quotes: true, trim: false };
}

/** csv-parse's own errors (an unclosed quote) become a 422 naming the line; size errors pass through. */
async function nextRecord<T>(iterator: AsyncIterator<T>): Promise<IteratorResult<T>> {
  try {
    return await iterator.next();
  } catch (err) {
    if (err instanceof HttpError) throw err;
    const e = err as { code?: string; message?: string; lines?: number };
    if (typeof e.code === 'string' && e.code.startsWith('CSV_')) {
      throw new Validation('file', `file: the CSV cannot be read${e.lines ? ` at line ${e.lines}` : ''}: ${(e.message ?? '').replace(/^Invalid \w+:\s*/, '')}`);
    }
    throw err;
  }
}

/** Counts the bytes as they pass and stops past the limit. A Readable is iterated without destroying it on early exit. */
async function* limited(source: ByteSource, seen: (bytes: number) => void): AsyncGenerator<Buffer> {
  const iterable = source instanceof Readable ? source.iterator({ destroyOnReturn: false }) : source;
  let total = 0;
  for await (const chunk of iterable) {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    total += buffer.length;
    seen(total);
    if (total > MAX_IMPORT_BYTES) throw new TooLarge();
    yield buffer;
  }
}

/** Finds the header line (up to the first line break outside quotes) as chunks arrive, scanning each byte once. */
class HeaderScan {
  line: string | undefined;
  private readonly decoder = new StringDecoder('utf8');
  private text = '';
  private quoted = false;

  push(chunk: Buffer): void {
    const start = this.text.length;
    this.text += this.decoder.write(chunk);
    for (let i = start; i < this.text.length; i++) {
      const c = this.text[i];
      if (c === '"') this.quoted = !this.quoted;
      else if (!this.quoted && (c === '\n' || c === '\r')) {
        this.line = this.text.slice(0, i);
        return;
      }
    }
  }

  finish(): void {
    this.line = this.text + this.decoder.end();
  }
}

function detectDelimiter(headerLine: string): string {
  const counts = new Map<string, number>([[',', 0], [';', 0], ['\t', 0]]);
  let quoted = false;
  for (const c of headerLine) {
    if (c === '"') quoted = !quoted;
    else if (!quoted && counts.has(c)) counts.set(c, counts.get(c)! + 1);
  }
  let best = ',';
  for (const [delimiter, count] of counts) if (count > counts.get(best)!) best = delimiter;
  return best;
}

/** Header lookup by normalised name (trimmed, case-insensitive). */
export function columnIndex(header: string[]): Map<string, number> {
  const index = new Map<string, number>();
  header.forEach((name, i) => {
    const key = name.trim().toLowerCase();
    if (!index.has(key)) index.set(key, i);
  });
  return index;
}
