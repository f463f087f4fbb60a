import { inspect } from 'node:util';
import { Box, render, Text } from 'ink';
import { createElement as h, type ReactElement } from 'react';
import type { CommandIo } from './io.js';
import { rate, summaryLines, type ImportStatus } from './import-summary.js';

const BAR_WIDTH = 30;

type Colour = 'green' | 'yellow' | 'red' | 'cyan';
type Paint = (colour: Colour, text: string) => string;

/**
 * Colours by the terminal the view is drawn on (io.stdout.hasColors: the caller's, when this runs inside `quoting
 * serve`), not by ink's own `color`, which follows the process's stdout: a server's, under systemd, is a journal.
 */
function painter(io: CommandIo): Paint {
  if (!io.stdout.hasColors?.()) return (_colour, text) => text;
  return (colour, text) => {
    const [open, close] = inspect.colors[colour]!;
    return `\u001b[${open}m${text}\u001b[${close}m`;
  };
}

function duration(seconds: number): string {
  if (!Number.isFinite(seconds)) return '?';
  const s = Math.max(0, Math.round(seconds));
  return s >= 60 ? `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s` : `${s}s`;
}

/** While running: a bar (when the size is known), rows, rows/s, failed so far and the ETA. At the end: the summary and first errors. */
function ImportView({ status, now, paint }: { status: ImportStatus; now: number; paint: Paint }): ReactElement {
  if (status.report) {
    const [head, ...rest] = summaryLines(status);
    const colour = status.aborted ? 'red' : status.report.failed > 0 ? 'yellow' : 'green';
    return h(Box, { flexDirection: 'column' }, h(Text, null, paint(colour, head)), ...rest.map((line, i) => h(Text, { key: i }, line)));
  }
  const { rowsPerSecond, fraction, etaSeconds } = rate(status, now);
  const filled = fraction === undefined ? 0 : Math.round(fraction * BAR_WIDTH);
  const bar = fraction === undefined ? '' : `${'█'.repeat(filled)}${'░'.repeat(BAR_WIDTH - filled)} ${String(Math.round(fraction * 100)).padStart(3)} % `;
  const failed = `${status.progress.failed} failed`;
  return h(
    Box,
    { flexDirection: 'column' },
    h(Text, null, `Importing ${status.kind} into ${status.workspace}${status.dryRun ? ' (dry run)' : ''}`),
    h(
      Text,
      null,
      bar && paint('cyan', bar),
      `${status.progress.rows} rows · ${Math.round(rowsPerSecond)} rows/s · `,
      status.progress.failed ? paint('yellow', failed) : failed,
      ` · ETA ${etaSeconds === undefined ? '?' : duration(etaSeconds)}`,
    ),
  );
}

/** Renders to the command's own stdout (a terminal); ink never reads input here, so a CSV on stdin is left alone. */
export function startImportView(io: CommandIo) {
  const paint = painter(io);
  let latest: ImportStatus | undefined;
  const instance = render(h(Text, null, 'Reading the file…'), {
    stdout: io.stdout as NodeJS.WriteStream,
    stderr: io.stderr as NodeJS.WriteStream,
    exitOnCtrlC: false,
    patchConsole: false,
  });
  // rows/s and the ETA move between batches too.
  const timer = setInterval(() => latest && instance.rerender(h(ImportView, { status: latest, now: Date.now(), paint })), 250);
  return {
    update(status: ImportStatus) {
      latest = { ...status };
      instance.rerender(h(ImportView, { status: latest, now: Date.now(), paint }));
    },
    async finish(status: ImportStatus) {
      clearInterval(timer);
      if (status.report) instance.rerender(h(ImportView, { status: { ...status }, now: Date.now(), paint }));
      instance.unmount();
      await instance.waitUntilExit();
    },
  };
}
