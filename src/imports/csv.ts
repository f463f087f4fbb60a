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
  /** A cell of the row has text after its closing quote: the header name of the first such cell; values are empty, and it is a row error. */
  badQuote?: string;
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
 * so only one batch of rows is ever held. A UTF-8 BOM, LF, CRLF and CR (mixed too), quoted fields with commas, quotes and
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

  const quotes = new QuoteGuard(delimiter);
  async function* all(): AsyncGenerator<Buffer> {
    for (const chunk of head) yield quotes.pass(chunk);
    for (let next = await chunks.next(); !next.done; next = await chunks.next()) yield quotes.pass(next.value);
    const tail = quotes.finish();
    if (tail.length) yield tail;
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
  let firstRecord: string[];
  try {
    const first = await nextRecord(iterator);
    if (first.done) throw new Validation('file', 'file: the CSV is empty; its first line must name the columns.');
    if (lines.cuts > 0) throw new Validation('file', `file: the header line is longer than ${MAX_RECORD_BYTES / 1024 / 1024} MB.`);
    if (first.value.length > MAX_COLUMNS) {
      throw new Validation('file', `file: the header has ${first.value.length} columns; at most ${MAX_COLUMNS} are read.`);
    }
    firstRecord = first.value;
    header = first.value.map((cell) => cell.trim());
  } catch (err) {
    close();
    throw err;
  }

  async function* rows(): AsyncGenerator<CsvRow> {
    let count = 0;
    /** The line the next record starts on (the header's lines counted): a row is named by the line it starts on. */
    let next = 2 + lineBreaks(firstRecord);
    /** Lines the guard cut, and cells it marked, that a record has not yet shown (the guards read ahead of the parser). */
    let found = 0;
    let foundQuotes = 0;
    try {
      for (let read = await nextRecord(iterator); !read.done; read = await nextRecord(iterator)) {
        const record = read.value;
        const line = next;
        next += 1 + lineBreaks(record);
        if (record.every((cell) => cell.trim() === '')) continue;
        if (++count > MAX_IMPORT_ROWS) {
          throw new Validation('file', `file: the CSV has more than ${MAX_IMPORT_ROWS} rows; split it into smaller files.`);
        }
        if (lines.cuts > found && record.some((cell) => cell.includes(CUT_MARK))) {
          found++;
          yield { line, values: [], oversized: true };
          continue;
        }
        if (quotes.marked > foundQuotes) {
          const bad = record.findIndex((cell) => cell.includes(QUOTE_MARK));
          if (bad !== -1) {
            foundQuotes++;
            yield { line, values: [], badQuote: header[bad] || `column ${bad + 1}` };
            continue;
          }
        }
        yield { line, values: record };
      }
    } finally {
      close();
    }
  }
  return { header, rows: rows(), bytesRead: () => bytes };
}

/**
 * Refuses a file of more than MAX_IMPORT_ROWS rows before anything is written (the import itself would find out
 * only once it had written that many). A record ends at a line break outside a quoted cell, so a file is read as
 * CSV, by the import's own reader (which counts rows exactly as the import does), only when those line breaks allow
 * more rows than the limit: the header and the rows of 50,000 lines end in one more, and a cell's own lines (a
 * product's HTML description, an order's notes) are not counted.
 */
export async function checkRowLimit(read: () => Readable): Promise<void> {
  if ((await rowsAtMost(read())) <= MAX_IMPORT_ROWS) return;
  const csv = await openCsv(read());
  for await (const _row of csv.rows);
}

/**
 * The most rows a file can hold: its line breaks outside quoted cells (LF, CRLF and a lone CR each once), less the
 * header's, plus one for a last line without a break. The delimiter and the quoted cells are found as the import
 * finds them (LineGuard, the header line, then QuoteGuard); blank lines count here, so it is never fewer than the
 * rows the reader counts, and a file without blank lines holds exactly as many (exported for the tests).
 */
export async function rowsAtMost(stream: Readable): Promise<number> {
  const lines = new LineGuard();
  const scan = new HeaderScan();
  const head: Buffer[] = [];
  let quotes: QuoteGuard | undefined;
  try {
    for await (const chunk of stream) {
      const bytes = lines.pass(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
      if (quotes) {
        quotes.pass(bytes);
        continue;
      }
      head.push(bytes);
      scan.push(bytes);
      // The reader refuses a header this long; it is left to say so.
      if (scan.line === undefined && scan.length > 2 * MAX_RECORD_BYTES) return Infinity;
      if (scan.line !== undefined) quotes = guardAfter(scan.line, head);
    }
  } finally {
    stream.destroy();
  }
  if (!quotes) {
    scan.finish();
    quotes = guardAfter(scan.line!, head);
  }
  return quotes.rowsAtMost();
}

/** A counting QuoteGuard for the header line's delimiter, given the bytes read so far. */
function guardAfter(headerLine: string, head: Buffer[]): QuoteGuard {
  const quotes = new QuoteGuard(detectDelimiter(headerLine.replace(/^\uFEFF/, '')), true);
  for (const bytes of head) quotes.pass(bytes);
  head.length = 0;
  return quotes;
}

/**
 * csv-parse's options for an import (exported for the benchmark, which times csv-parse alone with them).
 * Empty lines are not skipped by the parser but by the reader, which counts every record itself: csv-parse's
 * `info` (its own counts) costs an object per record, a large share of its time.
 */
export function csvOptions(delimiter: string): Options {
  return {
    // trim: whitespace around a quoted cell is dropped (a hand-aligned export's); QuoteGuard has made any other text after a closing quote a marked cell.
    delimiter, bom: true, skip_empty_lines: false, relax_column_count: true, relax_quotes: true, trim: true,
    // Any line ending ends a record, mixed in one file too (csv-parse alone takes the first one it meets for all).
    record_delimiter: ['\r\n', '\n', '\r'],
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

/** Line breaks within a record's cells (CRLF counted once): the record's lines but its first. */
function lineBreaks(record: string[]): number {
  let breaks = 0;
  for (const cell of record) {
    if (cell.indexOf('\n') === -1 && cell.indexOf('\r') === -1) continue;
    for (let i = 0; i < cell.length; i++) {
      const c = cell.charCodeAt(i);
      if (c === 10 || (c === 13 && cell.charCodeAt(i + 1) !== 10)) breaks++;
    }
  }
  return breaks;
}

/** Marks a cell whose closing quote is followed by other text, so the row reader reports it: text no spreadsheet writes. */
const QUOTE_MARK = '\u0000\uFFFEquoting:after-quote\u0000';
const QUOTE_MARK_BYTES = Buffer.from(QUOTE_MARK);

const QUOTE = 34;
const CR = 13;
const LF = 10;
const enum Cell {
  /** Nothing but whitespace since the cell began. */
  Start,
  Unquoted,
  Quoted,
  /** A quote inside a quoted cell: an escaped quote if another follows, else the cell's end. */
  QuoteSeen,
  /** Whitespace after a closing quote. */
  Closed,
  /** Text after a closing quote, up to the cell's end: passed inside the cell's quotes, after QUOTE_MARK. */
  BadTail,
}

/**
 * Passes bytes through to csv-parse unchanged, except for a quoted cell whose closing quote is followed by text other
 * than whitespace: csv-parse would fail the whole file there (or, relaxed, keep the quotes in the value). The cell is
 * passed on still quoted, its closing quote escaped, QUOTE_MARK before the rest of it, and closed at its end; the row
 * reader turns the mark into a row error naming the line. Whitespace after a closing quote csv-parse drops (trim).
 * A quote opens a quoted cell only as the cell's first character but whitespace, as csv-parse reads it (relax_quotes).
 */
class QuoteGuard {
  /** Cells marked so far. */
  marked = 0;
  private state = Cell.Start;
  /** The closing quote and whitespace after it, held until what follows decides. */
  private held: number[] = [];
  private readonly delimiter: number;
  private begun = false;
  /** Counting line breaks outside quoted cells (rowsAtMost), not passing bytes on to a parser. */
  private readonly counting: boolean;
  private breaks = 0;
  /** A CR outside a quoted cell ended the last chunk: one break with an LF that begins the next, else one alone. */
  private crEnded = false;
  /** The last chunk ended with a line break outside a quoted cell. */
  private ended = true;

  constructor(delimiter: string, counting = false) {
    this.delimiter = delimiter.charCodeAt(0);
    this.counting = counting;
  }

  /** Counting: the most rows the bytes passed so far can hold (see rowsAtMost). */
  rowsAtMost(): number {
    return this.breaks + (this.crEnded ? 1 : 0) - 1 + (this.ended || this.crEnded ? 0 : 1);
  }

  /** Counting: the line breaks of chunk[from, to), all outside quoted cells. */
  private count(chunk: Buffer, from: number, to: number): void {
    for (let i = chunk.indexOf(LF, from); i !== -1 && i < to; i = chunk.indexOf(LF, i + 1)) this.breaks++;
    for (let i = chunk.indexOf(CR, from); i !== -1 && i < to; i = chunk.indexOf(CR, i + 1)) {
      if (i + 1 === chunk.length) this.crEnded = true;
      else if (chunk[i + 1] !== LF) this.breaks++;
    }
  }

  pass(chunk: Buffer): Buffer {
    const pieces: Buffer[] = [];
    /** Where the bytes not yet added to `pieces` begin. */
    let from = 0;
    const delimiter = this.delimiter;
    const space = (b: number) => b === 32 || b === 12 || (b === 9 && delimiter !== 9);
    let i = 0;
    if (this.counting && this.crEnded && chunk.length > 0) {
      // An LF that begins this chunk is outside a quoted cell too, and counted with it below.
      this.crEnded = false;
      if (chunk[0] !== LF) this.breaks++;
    }
    if (!this.begun && chunk.length > 0) {
      this.begun = true;
      // A UTF-8 BOM is not part of the first cell (csv-parse drops it).
      if (chunk[0] === 0xef && chunk[1] === 0xbb && chunk[2] === 0xbf) i = 3;
    }
    for (; i < chunk.length; i++) {
      const b = chunk[i];
      switch (this.state) {
        case Cell.Start:
        case Cell.Unquoted: {
          // Only quotes matter here: one opens a cell if nothing but whitespace stands between it and the cell's start.
          const quote = chunk.indexOf(QUOTE, i);
          const end = quote === -1 ? chunk.length : quote;
          if (this.counting) this.count(chunk, i, end);
          let j = end - 1;
          while (j >= i && space(chunk[j])) j--;
          const atStart = j < i ? this.state === Cell.Start : chunk[j] === delimiter || chunk[j] === CR || chunk[j] === LF;
          if (quote === -1) {
            this.state = atStart ? Cell.Start : Cell.Unquoted;
            i = chunk.length;
          } else {
            this.state = atStart ? Cell.Quoted : Cell.Unquoted;
            i = quote;
          }
          break;
        }
        case Cell.Quoted: {
          const quote = chunk.indexOf(QUOTE, i);
          if (quote === -1) {
            i = chunk.length;
            break;
          }
          i = quote;
          pieces.push(chunk.subarray(from, i));
          from = i + 1;
          this.held = [QUOTE];
          this.state = Cell.QuoteSeen;
          break;
        }
        case Cell.QuoteSeen:
        case Cell.Closed:
          if (b === QUOTE && this.state === Cell.QuoteSeen) {
            pieces.push(Buffer.from([QUOTE, QUOTE]));
            this.held = [];
            this.state = Cell.Quoted;
          } else if (space(b)) {
            this.held.push(b);
            this.state = Cell.Closed;
          } else if (b === delimiter || b === CR || b === LF) {
            if (this.counting) this.count(chunk, i, i + 1);
            pieces.push(Buffer.from(this.held));
            this.held = [];
            this.state = Cell.Start;
            from = i;
            continue;
          } else {
            // Text after the closing quote: the quote escaped, the cell kept open, the mark before the rest.
            pieces.push(Buffer.from([QUOTE, ...this.held]), QUOTE_MARK_BYTES);
            this.held = [];
            this.marked++;
            this.state = Cell.BadTail;
            i--;
          }
          from = i + 1;
          break;
        case Cell.BadTail:
          if (b === QUOTE) {
            pieces.push(chunk.subarray(from, i + 1), Buffer.from([QUOTE]));
            from = i + 1;
          } else if (b === delimiter || b === CR || b === LF) {
            if (this.counting) this.count(chunk, i, i + 1);
            pieces.push(chunk.subarray(from, i), Buffer.from([QUOTE]));
            from = i;
            this.state = Cell.Start;
          }
          break;
      }
    }
    if (this.counting && chunk.length > 0) {
      const last = chunk[chunk.length - 1];
      this.ended = this.state === Cell.Start && (last === LF || last === CR);
    }
    if (from === 0 && pieces.length === 0) return chunk;
    if (from < chunk.length) pieces.push(chunk.subarray(from));
    return Buffer.concat(pieces);
  }

  /** What is held at the end of the file. */
  finish(): Buffer {
    if (this.state === Cell.BadTail) return Buffer.from([QUOTE]);
    return Buffer.from(this.held);
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
