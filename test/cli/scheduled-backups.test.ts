import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import test, { type ExecutionContext } from 'ava';
import { backupKind } from '../../src/ops/backup.js';
import { freePort, migratedBackend, migratedDataDir, runCli, scratchPostgres, startServe, tempDir } from '../helpers/cli.js';
import { embeddedTest, postgresTest } from '../helpers/skip.js';
import { PATIENCE_MS } from '../helpers/patience.js';

/**
 * Scheduled backups (README, Scheduled backups): on the embedded database `quoting serve` runs them on BACKUP_SCHEDULE;
 * on PostgreSQL the installer's timer runs `quoting backup` (no --out), which is what is run here. Every two seconds
 * (a six-field expression, seconds first) keeps the schedule's tests short.
 */

const TOKEN = 'scheduled-backups-metrics';
const EVERY_TWO_SECONDS = '*/2 * * * * *';
const BACKUP_NAME = /^quoting-\d{4}-\d{2}-\d{2}T\d{6}Z(-\d+)?\.backup$/;

interface LastBackup {
  at: string;
  ok: boolean;
  file: string;
  error?: string;
  lastSuccess?: { at: string; file: string };
}

function lastBackup(dataDir: string): LastBackup | undefined {
  try {
    return JSON.parse(fs.readFileSync(path.join(dataDir, 'last-backup.json'), 'utf8'));
  } catch {
    return undefined;
  }
}

/** Waits for the recorded outcome to satisfy `ready` (the schedule's runs are events this test cannot hear otherwise). */
async function waitForBackup(dataDir: string, ready: (last: LastBackup) => boolean): Promise<LastBackup> {
  const until = Date.now() + PATIENCE_MS;
  for (;;) {
    const last = lastBackup(dataDir);
    if (last && ready(last)) return last;
    if (Date.now() > until) throw new Error(`no such backup within ${PATIENCE_MS} ms; last: ${JSON.stringify(last)}`);
    await sleep(200);
  }
}

async function scrape(url: string): Promise<string> {
  const res = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
  if (res.status !== 200) throw new Error(`/metrics: ${res.status}`);
  return res.text();
}

function figure(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  if (!line) throw new Error(`no ${series} in /metrics`);
  return Number(line.split(' ')[1]);
}

async function doctorBackups(env: Record<string, string>): Promise<{ code: number | null; check: { status: string; message: string; fix: string | null } }> {
  const result = await runCli(['doctor', '--json'], { env, timeoutMs: 180_000 });
  const check = (JSON.parse(result.stdout) as { checks: { id: string; status: string; message: string; fix: string | null }[] }).checks.find((c) => c.id === 'backups');
  if (!check) throw new Error(`doctor has no backups check: ${result.stdout}`);
  return { code: result.code, check };
}

function backupsIn(dir: string): string[] {
  return fs.readdirSync(dir).filter((name) => BACKUP_NAME.test(name));
}

function onlyTheLatest(t: ExecutionContext, dir: string, older: string, last: LastBackup): void {
  t.deepEqual(fs.readdirSync(dir), [path.basename(last.file)], 'one backup kept (BACKUP_KEEP=1), no partial file left');
  t.false(fs.existsSync(older), 'the older backup was removed');
  t.is(fs.statSync(last.file).mode & 0o777, 0o600);
  t.is(fs.statSync(dir).mode & 0o777, 0o700);
}

embeddedTest('serve runs the schedule on the embedded database: two backups run, the older is removed with BACKUP_KEEP=1, each 0600', async (t) => {
  t.timeout(600_000);
  const dataDir = await migratedDataDir(t);
  const backupDir = path.join(tempDir(t), 'backups');
  const env = { DATA_DIR: dataDir, BACKUP_SCHEDULE: EVERY_TWO_SECONDS, BACKUP_DIR: backupDir, BACKUP_KEEP: '1', METRICS_TOKEN: TOKEN };
  const server = await startServe(t, ['--port', String(await freePort())], { env });
  const first = await waitForBackup(dataDir, (last) => last.ok);
  t.regex(path.basename(first.file), BACKUP_NAME);
  const second = await waitForBackup(dataDir, (last) => last.ok && last.file !== first.file);
  t.true(second.file > first.file, 'named by its time, later than the first');

  // doctor runs inside the server (the socket), with its settings; /metrics reads the counts from the database.
  const doctor = await doctorBackups({ DATA_DIR: dataDir });
  t.is(doctor.check.status, 'ok', doctor.check.message);
  t.regex(doctor.check.message, /^the last backup ran \d+ s ago: .*quoting-.*\.backup$/);
  const metrics = await scrape(server.url);
  t.true(figure(metrics, 'quoting_backups_total{outcome="succeeded"}') >= 2);
  t.is(figure(metrics, 'quoting_backups_total{outcome="failed"}'), 0);
  t.is(figure(metrics, 'quoting_backup_last_run_success'), 1);
  t.true(figure(metrics, 'quoting_backup_last_success_timestamp_seconds') >= Date.parse(first.at) / 1000 - 1);

  // Stopping the server stops the schedule (a backup under way finishes first): nothing runs after it.
  t.is((await server.stop()).code, 0);
  const last = lastBackup(dataDir)!;
  onlyTheLatest(t, backupDir, first.file, last);
  t.is(backupKind(last.file), 'pglite', 'a backup restore takes');
  await sleep(2500);
  t.deepEqual(lastBackup(dataDir), last, 'no backup ran after the server stopped');
});

embeddedTest('a failing scheduled backup on the embedded database is logged, fails doctor and shows in /metrics', async (t) => {
  t.timeout(600_000);
  const dataDir = await migratedDataDir(t);
  const notADirectory = path.join(tempDir(t), 'a-file');
  fs.writeFileSync(notADirectory, 'not a directory');
  const env = { DATA_DIR: dataDir, BACKUP_SCHEDULE: EVERY_TWO_SECONDS, BACKUP_DIR: notADirectory, METRICS_TOKEN: TOKEN, LOG_LEVEL: 'info' };
  const server = await startServe(t, ['--port', String(await freePort())], { env });
  const failed = await waitForBackup(dataDir, (last) => !last.ok);
  t.is(failed.error, `BACKUP_DIR ${notADirectory} is not a directory`);

  const doctor = await doctorBackups({ DATA_DIR: dataDir });
  t.is(doctor.code, 1);
  t.is(doctor.check.status, 'fail');
  t.regex(doctor.check.message, new RegExp(`^the last backup failed \\d+ s ago: BACKUP_DIR ${notADirectory} is not a directory; none has succeeded yet$`));
  t.regex(doctor.check.fix!, /quoting backup/);
  const metrics = await scrape(server.url);
  t.true(figure(metrics, 'quoting_backups_total{outcome="failed"}') >= 1);
  t.is(figure(metrics, 'quoting_backup_last_run_success'), 0);
  t.is(figure(metrics, 'quoting_backup_last_success_timestamp_seconds'), 0);

  await server.stop();
  const logged = server
    .output()
    .stderr.split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line))
    .find((line) => line.msg === 'backup failed');
  t.is(logged?.level, 'error');
  t.is(logged?.error, `BACKUP_DIR ${notADirectory} is not a directory`);
  t.true(fs.statSync(notADirectory).isFile(), 'the file in the way is left alone');
});

postgresTest('on PostgreSQL the timer runs quoting backup: two runs leave the newer with BACKUP_KEEP=1, 0600; a failing one fails doctor and shows in /metrics', async (t) => {
  t.timeout(600_000);
  const dataDir = path.join(tempDir(t), 'data');
  const backupDir = path.join(tempDir(t), 'backups');
  const env = { DATABASE_URL: await scratchPostgres(t, { migrated: true }), DATA_DIR: dataDir, BACKUP_SCHEDULE: '0 3 * * *', BACKUP_DIR: backupDir, BACKUP_KEEP: '1', METRICS_TOKEN: TOKEN };
  const unset = await doctorBackups({ ...env, BACKUP_SCHEDULE: '' });
  t.is(unset.check.status, 'warn');
  t.regex(unset.check.fix!, /install\.sh --backup "0 3 \* \* \*"/);

  const first = await runCli(['backup'], { env, timeoutMs: 180_000 });
  t.is(first.code, 0, first.stderr);
  const firstFile = lastBackup(dataDir)!.file;
  t.true(first.stdout.startsWith(`Backed up PostgreSQL at 127.0.0.1:5432/quoting_cli_`), first.stdout);
  t.true(first.stdout.endsWith(` to ${firstFile} (${/\((\d+ KB)\)/.exec(first.stdout)?.[1]}).\n`), first.stdout);
  const second = await runCli(['backup'], { env, timeoutMs: 180_000 });
  t.is(second.code, 0, second.stderr);
  t.regex(second.stdout, /; removed 1 older \(BACKUP_KEEP=1\)\.\n$/);
  const last = lastBackup(dataDir)!;
  t.not(last.file, firstFile);
  onlyTheLatest(t, backupDir, firstFile, last);
  t.is(backupKind(last.file), 'postgres');
  const healthy = await doctorBackups(env);
  t.is(healthy.check.status, 'ok', healthy.check.message);

  const notADirectory = path.join(tempDir(t), 'a-file');
  fs.writeFileSync(notADirectory, 'not a directory');
  const failing = await runCli(['backup'], { env: { ...env, BACKUP_DIR: notADirectory } });
  t.is(failing.code, 1);
  t.deepEqual(failing.errorLines.filter((line) => line.startsWith('error:')), [`error: backup failed: BACKUP_DIR ${notADirectory} is not a directory`]);
  const doctor = await doctorBackups(env);
  t.is(doctor.code, 1);
  t.is(doctor.check.status, 'fail');
  t.regex(doctor.check.message, new RegExp(`^the last backup failed \\d+ s ago: BACKUP_DIR ${notADirectory} is not a directory; the last good one is \\d+ s old \\(${last.file}\\)$`));

  // Any server's /metrics: the counts are in the database, whichever process backed up.
  const server = await startServe(t, ['--port', String(await freePort())], { env: { ...env, BACKUP_SCHEDULE: EVERY_TWO_SECONDS } });
  const metrics = await scrape(server.url);
  await sleep(2500);
  t.is(figure(metrics, 'quoting_backups_total{outcome="succeeded"}'), 2);
  t.is(figure(metrics, 'quoting_backups_total{outcome="failed"}'), 1);
  t.is(figure(metrics, 'quoting_backup_last_run_success'), 0);
  t.true(figure(metrics, 'quoting_backup_last_success_timestamp_seconds') >= Date.parse(last.at) / 1000 - 1);
  await server.stop();
  t.deepEqual(backupsIn(backupDir), [path.basename(last.file)], 'serve on PostgreSQL runs no schedule of its own');
});

test("doctor warns when the last backup is older than twice the schedule's longest gap (a weekly one may be days old)", async (t) => {
  t.timeout(600_000);
  const dataDir = path.join(tempDir(t), 'data');
  const env: Record<string, string> = { ...(await migratedBackend(t)), BACKUP_SCHEDULE: '0 3 * * *' };
  env.DATA_DIR ??= dataDir;
  fs.mkdirSync(env.DATA_DIR, { recursive: true, mode: 0o700 });
  const at = new Date(Date.now() - 3 * 24 * 3_600_000).toISOString();
  fs.writeFileSync(path.join(env.DATA_DIR, 'last-backup.json'), JSON.stringify({ at, ok: true, file: '/srv/backups/quoting-old.backup', lastSuccess: { at, file: '/srv/backups/quoting-old.backup' } }));
  const daily = await doctorBackups(env);
  t.is(daily.check.status, 'warn');
  t.is(daily.check.message, `the last backup ran 3 days ago: /srv/backups/quoting-old.backup, longer than twice the schedule's interval ("0 3 * * *")`);
  t.regex(daily.check.fix!, env.DATABASE_URL ? /quoting-backup\.timer/ : /quoting serve runs it/);
  const weekly = await doctorBackups({ ...env, BACKUP_SCHEDULE: '0 3 * * 1' });
  t.is(weekly.check.status, 'ok', weekly.check.message);
});

test('a BACKUP_SCHEDULE that is not a cron expression stops the program with one line naming it', async (t) => {
  for (const schedule of ['61 * * * *', 'daily', '* * * *']) {
    const result = await runCli(['backup'], { env: { BACKUP_SCHEDULE: schedule, DATA_DIR: tempDir(t) } });
    t.is(result.code, 1);
    t.deepEqual(result.errorLines, [`error: BACKUP_SCHEDULE expects a cron expression such as "0 3 * * *" (minute hour day-of-month month day-of-week) (got ${JSON.stringify(schedule)})`]);
  }
  const keep = await runCli(['backup'], { env: { BACKUP_KEEP: '0', DATA_DIR: tempDir(t) } });
  t.deepEqual(keep.errorLines, ['error: BACKUP_KEEP expects a whole number of backups from 1 to 10000 (got "0")']);
});
