import fs from 'node:fs';
import type { Readable } from 'node:stream';
import { systemAccess } from '../access.js';
import { HttpError } from '../errors.js';
import { importCsv, type ImportKind, type ImportProgress, type ImportReport } from '../imports/service.js';
import { findWorkspaceBySlug } from '../workspaces/service.js';
import { commandConfig, commandEnv, commandPath, withDatabase } from './context.js';
import { say, wantsLiveView, type CommandIo } from './io.js';

/** Errors listed after the summary; --json has them all. */
export const ERRORS_SHOWN = 20;

export interface ImportCommandOptions {
  workspace: string;
  dryRun?: boolean;
  onError?: 'skip' | 'abort';
  json?: boolean;
  envFile?: string;
}

/** What a progress view is told as the import runs and when it ends. */
export interface ImportStatus {
  kind: ImportKind;
  workspace: string;
  dryRun: boolean;
  startedAt: number;
  progress: ImportProgress;
  /** File size when known (not for standard input): the bar and the ETA need it. */
  totalBytes?: number;
  report?: ImportReport;
  /** Set when the import stopped as a whole (on_error=abort with failed rows). */
  aborted?: string;
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
  const { source, totalBytes } = await openInput(file, io);
  const status: ImportStatus = {
    kind,
    workspace: opts.workspace,
    dryRun: Boolean(opts.dryRun),
    startedAt: Date.now(),
    progress: { rows: 0, failed: 0, bytes: 0 },
    totalBytes,
  };
  const view: View = opts.json ? silentView() : wantsLiveView(io.stdout, commandEnv()) ? await inkView(io) : plainView(io);
  try {
    await withDatabase(
      config,
      async ({ knex }) => {
        const workspace = await findWorkspaceBySlug(knex, opts.workspace);
        if (!workspace) throw new Error(`no workspace with slug "${opts.workspace}"`);
        const access = systemAccess(workspace.id, { events: config.WEBHOOKS_ENABLED });
        status.startedAt = Date.now();
        try {
          status.report = await importCsv(knex, access, kind, source, {
            dryRun: status.dryRun,
            onError: opts.onError ?? 'skip',
            windowSeconds: config.IMPORT_WINDOW_SECONDS,
            signal: io.signal,
            onProgress: (progress) => {
              status.progress = progress;
              view.update(status);
            },
          });
        } catch (err) {
          const report = err instanceof HttpError ? (err.data?.import as ImportReport | undefined) : undefined;
          if (!report) throw err;
          status.report = report;
          status.aborted = (err as Error).message;
        }
      },
      { needsSchema: true },
    );
  } catch (err) {
    await view.finish(status);
    throw err;
  }
  await view.finish(status);
  const report = status.report!;
  if (opts.json) say(io.stdout, JSON.stringify(report));
  if (report.failed > 0) throw new Error(`${report.failed} of ${report.rows} rows failed${status.aborted || status.dryRun ? '; nothing was written' : ''}`);
}

/** The file, or standard input for `-`; a missing or unreadable file is one line naming it. */
async function openInput(file: string, io: CommandIo): Promise<{ source: Readable; totalBytes?: number }> {
  if (file === '-') return { source: io.stdin };
  try {
    const handle = await fs.promises.open(commandPath(file), 'r');
    const stat = await handle.stat();
    if (stat.isDirectory()) {
      await handle.close();
      throw Object.assign(new Error('it is a directory'), { code: 'EISDIR' });
    }
    return { source: handle.createReadStream(), totalBytes: stat.size };
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const reason = e.code === 'ENOENT' ? 'no such file' : e.code === 'EACCES' ? 'permission denied' : e.code === 'EISDIR' ? 'it is a directory' : e.message;
    throw new Error(`cannot read ${file}: ${reason}`);
  }
}

/** The summary: one line of counts, then the first errors (row, field, message). */
export function summaryLines(status: ImportStatus): string[] {
  const r = status.report!;
  const what = status.kind === 'products' ? 'rows' : 'orders';
  const lines = [
    `${status.dryRun ? 'Dry run (nothing written): ' : ''}${r.rows} rows read from the ${status.kind} file: ` +
      `${r.created} created, ${r.updated} updated, ${r.unchanged} unchanged (${what}), ${r.failed} rows failed.`,
  ];
  if (status.aborted) lines.push(`Nothing was imported: ${status.aborted}`);
  // Messages start with their field ("price: must …"); other ones get it in front.
  for (const e of r.errors.slice(0, ERRORS_SHOWN)) lines.push(`  line ${e.row}, ${e.message.startsWith(`${e.field}:`) ? e.message : `${e.field}: ${e.message}`}`);
  if (r.errors.length > ERRORS_SHOWN) lines.push(`  … and ${r.errors.length - ERRORS_SHOWN} more errors (--json lists them all).`);
  return lines;
}

export function rate(status: ImportStatus, now = Date.now()): { rowsPerSecond: number; etaSeconds?: number; fraction?: number } {
  const seconds = Math.max((now - status.startedAt) / 1000, 0.001);
  const rowsPerSecond = status.progress.rows / seconds;
  if (!status.totalBytes) return { rowsPerSecond };
  const fraction = Math.min(status.progress.bytes / status.totalBytes, 1);
  const bytesPerSecond = status.progress.bytes / seconds;
  return { rowsPerSecond, fraction, etaSeconds: bytesPerSecond > 0 ? (status.totalBytes - status.progress.bytes) / bytesPerSecond : undefined };
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
