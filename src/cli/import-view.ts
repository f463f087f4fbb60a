import { Box, render, Text } from 'ink';
import { createElement as h, type ReactElement } from 'react';
import type { CommandIo } from './io.js';
import { rate, summaryLines, type ImportStatus } from './import.js';

const BAR_WIDTH = 30;

function duration(seconds: number): string {
  if (!Number.isFinite(seconds)) return '?';
  const s = Math.max(0, Math.round(seconds));
  return s >= 60 ? `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s` : `${s}s`;
}

/** While running: a bar (when the size is known), rows, rows/s, failed so far and the ETA. At the end: the summary and first errors. */
function ImportView({ status, now }: { status: ImportStatus; now: number }): ReactElement {
  if (status.report) {
    const [head, ...rest] = summaryLines(status);
    return h(
      Box,
      { flexDirection: 'column' },
      h(Text, { color: status.report.failed > 0 ? 'yellow' : 'green' }, head),
      ...rest.map((line, i) => h(Text, { key: i, color: i === 0 && status.aborted ? 'red' : undefined }, line)),
    );
  }
  const { rowsPerSecond, fraction, etaSeconds } = rate(status, now);
  const filled = fraction === undefined ? 0 : Math.round(fraction * BAR_WIDTH);
  const bar = fraction === undefined ? '' : `${'█'.repeat(filled)}${'░'.repeat(BAR_WIDTH - filled)} ${String(Math.round(fraction * 100)).padStart(3)} % `;
  return h(
    Box,
    { flexDirection: 'column' },
    h(Text, null, `Importing ${status.kind} into ${status.workspace}${status.dryRun ? ' (dry run)' : ''}`),
    h(
      Text,
      null,
      h(Text, { color: 'cyan' }, bar),
      `${status.progress.rows} rows · ${Math.round(rowsPerSecond)} rows/s · `,
      h(Text, { color: status.progress.failed ? 'yellow' : undefined }, `${status.progress.failed} failed`),
      ` · ETA ${etaSeconds === undefined ? '?' : duration(etaSeconds)}`,
    ),
  );
}

/** Renders to the command's own stdout (a terminal); ink never reads input here, so a CSV on stdin is left alone. */
export function startImportView(io: CommandIo) {
  let latest: ImportStatus | undefined;
  const instance = render(h(Text, null, 'Reading the file…'), {
    stdout: io.stdout as NodeJS.WriteStream,
    stderr: io.stderr as NodeJS.WriteStream,
    exitOnCtrlC: false,
    patchConsole: false,
  });
  // rows/s and the ETA move between batches too.
  const timer = setInterval(() => latest && instance.rerender(h(ImportView, { status: latest, now: Date.now() })), 250);
  return {
    update(status: ImportStatus) {
      latest = { ...status };
      instance.rerender(h(ImportView, { status: latest, now: Date.now() }));
    },
    async finish(status: ImportStatus) {
      clearInterval(timer);
      if (status.report) instance.rerender(h(ImportView, { status: { ...status }, now: Date.now() }));
      instance.unmount();
      await instance.waitUntilExit();
    },
  };
}
