import type { Readable } from 'node:stream';
import { systemAccess } from '../access.js';
import { HttpError } from '../errors.js';
import { importCsv, type ImportKind, type ImportReport } from '../imports/service.js';
import { findWorkspaceBySlug } from '../workspaces/service.js';
import { callerEnv, commandConfig, commandPath, servedCommand, withDatabase } from './context.js';
import { openFile } from './input.js';
import { say, wantsLiveView, type CommandIo } from './io.js';
import { rate, summaryLines, type ImportStatus } from './import-summary.js';

export interface ImportCommandOptions {
  workspace: string;
  dryRun?: boolean;
  onError?: 'skip' | 'abort';
  json?: boolean;
  envFile?: string;
}

interface View {
  update(status: ImportStatus): void;
  finish(status: ImportStatus): Promise<void>;
}

/**
 * `quoting import products|orders <file|-> --workspace <slug>`: the same service as the HTTP routes.
 * Streams, terminal-ness and the file's directory come from `io` and the command context, so the
 * command runs the same inside `quoting serve`. Exit 0 when every row is fine; when any failed, the
 * summary is printed and the command fails with one line saying how many (exit 1).
 */
export async function importCommand(kind: ImportKind, file: string, options: Record<string, unknown>, io: CommandIo): Promise<void> {
  const opts = options as unknown as ImportCommandOptions;
  const config = commandConfig(options);
  const input = await openInput(file, io);
  const status: ImportStatus = {
    kind,
    workspace: opts.workspace,
    dryRun: Boolean(opts.dryRun),
    startedAt: Date.now(),
    progress: { rows: 0, failed: 0, bytes: 0 },
    totalBytes: input.totalBytes,
  };
  const tally = { bytes: 0, lines: 0 };
  const view: View = opts.json ? silentView() : wantsLiveView(io.stdout, callerEnv()) ? await inkView(io) : plainView(io);
  try {
    await withDatabase(
      config,
      async ({ knex }) => {
        const workspace = await findWorkspaceBySlug(knex, opts.workspace);
        if (!workspace) throw new Error(`no workspace with slug "${opts.workspace}"`);
        const access = systemAccess(workspace.id, { events: config.WEBHOOKS_ENABLED });
        status.startedAt = Date.now();
        try {
          status.report = await importCsv(knex, access, kind, counted(input.source, tally), {
            dryRun: status.dryRun,
            onError: opts.onError ?? 'skip',
            windowSeconds: config.IMPORT_WINDOW_SECONDS,
            signal: io.signal,
            onProgress: (progress) => {
              status.progress = progress;
              status.bytesPerLine = tally.lines > 0 ? tally.bytes / tally.lines : undefined;
              view.update(status);
            },
          });
        } catch (err) {
          const report = err instanceof HttpError ? (err.data?.import as ImportReport | undefined) : undefined;
          if (!report) throw err;
          status.report = report;
          status.aborted = (err as Error).message;
        }
        status.finishedAt = Date.now();
      },
      { needsSchema: true },
    );
  } catch (err) {
    await view.finish(status);
    throw err;
  } finally {
    input.close();
  }
  await view.finish(status);
  const report = status.report!;
  if (opts.json) say(io.stdout, JSON.stringify(report));
  if (report.failed > 0) throw new Error(`${report.failed} of ${report.rows} rows failed${status.aborted || status.dryRun ? '; nothing was written' : ''}`);
}

/**
 * Standard input for `-`, or the file. Run inside `quoting serve` for another process, the caller has
 * opened the file itself and streams it as stdin (forward.ts): the server opens no path of the caller's.
 */
async function openInput(file: string, io: CommandIo): Promise<{ source: Readable; totalBytes?: number; close(): void }> {
  if (file === '-') return { source: io.stdin, close() {} };
  const served = servedCommand();
  if (served) {
    if (served.input?.file !== file) throw new Error(`cannot read ${file}: the server reads a file only as its caller sends it`);
    return { source: io.stdin, totalBytes: served.input.size, close() {} };
  }
  const { stream, size } = await openFile(file, commandPath(file));
  return { source: stream, totalBytes: size, close: () => stream.destroy() };
}

/** Counts the bytes and line breaks of the file as the import reads it (for rate); its file is closed however the import ends. */
async function* counted(source: Readable, tally: { bytes: number; lines: number }): AsyncGenerator<Buffer> {
  for await (const chunk of source) {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    tally.bytes += buffer.length;
    for (let at = buffer.indexOf(10); at !== -1; at = buffer.indexOf(10, at + 1)) tally.lines++;
    yield buffer;
  }
}

function silentView(): View {
  return { update() {}, async finish() {} };
}

/** No terminal: a progress line on stderr at most every second, the summary on stdout. */
function plainView(io: CommandIo): View {
  let last = 0;
  let printedRows = -1;
  const line = (status: ImportStatus) => {
    if (status.progress.rows === printedRows) return;
    printedRows = status.progress.rows;
    const { rowsPerSecond, fraction } = rate(status);
    const percent = fraction === undefined ? '' : ` (${Math.round(fraction * 100)} %)`;
    say(io.stderr, `progress: ${status.progress.rows} rows${percent}, ${status.progress.failed} failed, ${Math.round(rowsPerSecond)} rows/s`);
  };
  return {
    update(status) {
      if (Date.now() - last < 1000) return;
      last = Date.now();
      line(status);
    },
    async finish(status) {
      if (!status.report) return;
      line({ ...status, progress: { ...status.progress, rows: status.report.rows, failed: status.report.failed } });
      for (const text of summaryLines(status)) say(io.stdout, text);
    },
  };
}

/** A terminal: the ink view (loaded only here, so other commands and plain runs never load React). */
async function inkView(io: CommandIo): Promise<View> {
  const { startImportView } = await import('./import-view.js');
  return startImportView(io);
}
