import { pipeline, Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { parse, type Options, type Parser } from 'csv-parse';
import { HttpError, Validation } from '../errors.js';

/** Spec §8: 20 MB per file (413 above), 50,000 rows (422 above). */
export const MAX_IMPORT_BYTES = 20 * 1024 * 1024;
export const MAX_IMPORT_ROWS = 50_000;
/**
 * A row (one line, or a quoted cell's lines together) holds at most 1 MB, and the header at most 1,000 columns: what
 * the parser holds at once stays bounded whatever the file's shape (a 19 MB line of commas is 19 million cells).
 */
export const MAX_RECORD_BYTES = 1024 * 1024;
export const MAX_COLUMNS = 1000;

export class TooLarge extends HttpError {
  constructor(message = `The file is larger than ${MAX_IMPORT_BYTES / 1024 / 1024} MB; split it into smaller files.`) {
    super(413, message);
  }
}

export interface CsvRow {
  /** The line number a spreadsheet shows for this row (the header is line 1). */
  line: number;
  values: string[];
  /** The row was longer than MAX_RECORD_BYTES: cut, its values are empty, and it is a row error. */
  oversized?: true;
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
  const lines = new LineGuard();
  const chunks = limited(source, lines, (n) => (bytes = n));
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
    // The guard cuts a long line, but a quote opened and never closed keeps the header line open past any line.
    if (scan.line === undefined && scan.length > 2 * MAX_RECORD_BYTES) {
      throw new Validation('file', `file: the header line is longer than ${MAX_RECORD_BYTES / 1024 / 1024} MB, or opens a quote it never closes.`);
    }
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
  const close = () => {
    if (!parser.destroyed) parser.destroy();
    if (!input.destroyed) input.destroy();
  };
  let header: string[];
  try {
    const first = await nextRecord(iterator);
    if (first.done) throw new Validation('file', 'file: the CSV is empty; its first line must name the columns.');
    if (lines.cuts > 0) throw new Validation('file', `file: the header line is longer than ${MAX_RECORD_BYTES / 1024 / 1024} MB.`);
    if (first.value.length > MAX_COLUMNS) {
      throw new Validation('file', `file: the header has ${first.value.length} columns; at most ${MAX_COLUMNS} are read.`);
    }
    header = first.value.map((cell) => cell.trim());
  } catch (err) {
    close();
    throw err;
  }

  async function* rows(): AsyncGenerator<CsvRow> {
    let count = 0;
    /** Records read, the header and empty lines included: a record's number is the line a spreadsheet shows. */
    let line = 1;
    /** Lines the guard cut that a record has not yet shown (the guard reads ahead of the parser). */
    let found = 0;
    try {
      for (let next = await nextRecord(iterator); !next.done; next = await nextRecord(iterator)) {
        const record = next.value;
        line++;
        if (record.every((cell) => cell.trim() === '')) continue;
        if (++count > MAX_IMPORT_ROWS) {
          throw new Validation('file', `file: the CSV has more than ${MAX_IMPORT_ROWS} rows; split it into smaller files.`);
        }
        if (lines.cuts > found && record.some((cell) => cell.includes(CUT_MARK))) {
          found++;
          yield { line, values: [], oversized: true };
        } else yield { line, values: record };
      }
    } finally {
      close();
    }
  }
  return { header, rows: rows(), bytesRead: () => bytes };
}

/**
 * csv-parse's options for an import (exported for the benchmark, which times csv-parse alone with them).
 * Empty lines are not skipped by the parser but by the reader, which counts every record itself: csv-parse's
 * `info` (its own counts) costs an object per record, a large share of its time.
 */
export function csvOptions(delimiter: string): Options {
  return {
    delimiter, bom: true, skip_empty_lines: false, relax_column_count: true, relax_quotes: true, trim: false,
    // A line is cut at MAX_RECORD_BYTES before the parser sees it; this stops a quoted cell whose lines together pass it.
    max_record_size: MAX_RECORD_BYTES + CUT_MARK.length,
  };
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

/**
 * Counts the bytes as they pass and stops past the limit; cuts lines longer than a record may be. A Readable is iterated
 * without destroying it on early exit.
 */
async function* limited(source: ByteSource, lines: LineGuard, seen: (bytes: number) => void): AsyncGenerator<Buffer> {
  const iterable = source instanceof Readable ? source.iterator({ destroyOnReturn: false }) : source;
  let total = 0;
  for await (const chunk of iterable) {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    total += buffer.length;
    seen(total);
    if (total > MAX_IMPORT_BYTES) throw new TooLarge();
    yield lines.pass(buffer);
  }
}

/** Ends a line cut at MAX_RECORD_BYTES, so the row reader knows it: text no spreadsheet writes. */
const CUT_MARK = '\u0000\uFFFEquoting:line-cut\u0000';
const CUT_BYTES = Buffer.from(CUT_MARK);

/**
 * Passes bytes through, except that a line (up to a CR or LF, whatever the quoting) longer than MAX_RECORD_BYTES is cut
 * there and ended with CUT_MARK, the rest of it dropped. A line is part of one record, so a record a line makes too
 * long is too long itself; the parser never holds more than a record's bound.
 */
class LineGuard {
  /** Lines cut so far. */
  cuts = 0;
  /** Bytes of the current line passed so far. */
  private length = 0;
  /** Dropping the rest of a cut line. */
  private dropping = false;

  pass(chunk: Buffer): Buffer {
    if (!this.dropping && this.fits(chunk)) return chunk;
    const pieces: Buffer[] = [];
    const breaks = new LineBreaks(chunk);
    let at = 0;
    while (at < chunk.length) {
      const end = breaks.next(at);
      if (!this.dropping) {
        const room = MAX_RECORD_BYTES - this.length;
        const kept = Math.min(end - at, room);
        pieces.push(chunk.subarray(at, at + kept));
        this.length += kept;
        if (end - at > room) {
          this.dropping = true;
          this.cuts++;
        }
      }
      if (end === chunk.length) break;
      if (this.dropping) pieces.push(CUT_BYTES);
      this.dropping = false;
      this.length = 0;
      pieces.push(chunk.subarray(end, end + 1));
      at = end + 1;
    }
    return Buffer.concat(pieces);
  }

  /** True, with the line length carried on, when no line of the chunk passes the bound (the usual case, one scan). */
  private fits(chunk: Buffer): boolean {
    let length = this.length;
    const breaks = new LineBreaks(chunk);
    let at = 0;
    for (;;) {
      const end = breaks.next(at);
      length += end - at;
      if (length > MAX_RECORD_BYTES) return false;
      if (end === chunk.length) break;
      length = 0;
      at = end + 1;
    }
    this.length = length;
    return true;
  }
}

/** The CRs and LFs of a chunk in order; each kind is searched for again only once passed, so a chunk is scanned once. */
class LineBreaks {
  private lf: number;
  private cr: number;

  constructor(private readonly chunk: Buffer) {
    this.lf = chunk.indexOf(10);
    this.cr = chunk.indexOf(13);
  }

  /** The first CR or LF at or after `from`, or the chunk's length. */
  next(from: number): number {
    if (this.lf !== -1 && this.lf < from) this.lf = this.chunk.indexOf(10, from);
    if (this.cr !== -1 && this.cr < from) this.cr = this.chunk.indexOf(13, from);
    const lf = this.lf === -1 ? this.chunk.length : this.lf;
    const cr = this.cr === -1 ? this.chunk.length : this.cr;
    return Math.min(lf, cr);
  }
}

/** Finds the header line (up to the first line break outside quotes) as chunks arrive, scanning each byte once. */
class HeaderScan {
  line: string | undefined;
  private readonly decoder = new StringDecoder('utf8');
  private text = '';
  private quoted = false;

  /** Characters read so far. */
  get length(): number {
    return this.text.length;
  }

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
