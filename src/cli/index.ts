import fs from 'node:fs';
import { Argument, Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { processIo, type CommandIo } from './io.js';

type Opts = Record<string, unknown>;

/**
 * The `quoting` program, writing through `io`. Only commander is loaded up front; each command
 * loads its own modules when it runs, so `quoting --help` stays fast.
 */
export function buildProgram(io: CommandIo, args: string[] = []): Command {
  const program = new Command('quoting')
    .description('Quotes, orders, customers, products and sales channels: a self-hosted, multi-tenant service.')
    .version(packageVersion(), '-V, --version')
    .addOption(new Option('--env-file <path>', 'read settings from this env file first (also QUOTING_ENV_FILE)'))
    .showSuggestionAfterError()
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
      getOutHelpWidth: () => io.stdout.columns ?? 80,
      getErrHelpWidth: () => io.stdout.columns ?? 80,
    });
  const run = runner(io, args);

  program
    .command('serve')
    .description('start the HTTP API (embedded database: applies pending migrations itself)')
    .addOption(new Option('-p, --port <port>', 'port to listen on (default: PORT or 3000)').argParser(portNumber))
    .option('-H, --host <host>', 'address to bind (default: HOST or 127.0.0.1)')
    .option('--migrate', 'on PostgreSQL, apply pending migrations before starting')
    .action(run(async (opts, io) => (await import('./serve.js')).serve(opts, io, runProgram), { here: true }));

  program
    .command('migrate')
    .description('apply pending database migrations')
    .option('--status', 'list applied and pending migrations without applying anything')
    .action(run(async (opts, io) => (await import('./migrate.js')).migrate(opts, io)));

  program
    .command('rotate-keys')
    .description("issue a new public/secret key pair for a workspace (prints it once; the old keys stop working)")
    .requiredOption('--workspace <slug>', 'the workspace slug')
    .action(run(async (opts, io) => (await import('./workspace.js')).rotateKeysCommand(opts, io)));

  program
    .command('worker')
    .description('deliver due webhooks: one batch (for cron), or --watch to keep delivering')
    .option('--watch', 'keep running; pick up new deliveries as they are queued')
    .action(run(async (opts, io) => (await import('./webhooks.js')).workerCommand(opts, io)));

  program
    .command('doctor')
    .description('check the installation: each check prints ok, warn or fail with its fix (exit 1 on a fail)')
    .option('--json', 'print the findings as JSON')
    .action(run(async (opts, io) => (await import('./doctor.js')).doctorCommand(opts, io)));

  program
    .command('backup')
    .description('write a consistent copy of the database to a file (embedded: a data-directory dump; PostgreSQL: pg_dump)')
    .option('--out <file>', 'the backup file to write (without it: a scheduled backup into BACKUP_DIR, keeping BACKUP_KEEP)')
    .action(run(async (opts, io) => (await import('./backup.js')).backupCommand(opts, io)));

  program
    .command('restore')
    .description('restore a backup made by `quoting backup` into an empty database')
    .argument('<file>', 'the backup file')
    .option('--force', 'replace a database that already holds data')
    // Never inside a running server: the embedded database is restored with the server stopped (the lock says so).
    .action(run(async (opts, io, [file]) => (await import('./backup.js')).restoreCommand(file as string, opts, io), { here: true }));

  program
    .command('update')
    .description('update this server: install.sh --update (backup, new code, migrate, restart, doctor; needs root)')
    .option('--from <source>', 'the new source: a tarball (git archive) or a directory (needed unless run from a checkout)')
    .option('--root <dir>', 'a staging root, as install.sh --root (for tests)')
    .option('--dry-run', 'print each step and change nothing')
    // Never sent to a running server: the installer stops it.
    .action(run(async (opts, io) => (await import('./update.js')).updateCommand(opts, io), { here: true }));

  const webhooks = program.command('webhooks').description('manage webhook deliveries');
  webhooks
    .command('resend')
    .description('put deliveries back on the queue: by id, or all of a workspace with a status')
    .argument('[delivery-id...]', 'delivery ids to re-queue')
    .option('--workspace <slug>', 'with --status: the workspace whose deliveries to re-queue')
    .option('--status <status>', 'dead or failed')
    .option('--since <iso-date>', 'only deliveries created at or after this time')
    .option('--subscription <id>', 'only deliveries of this subscription')
    .action(
      run(async (opts, io, [ids]) => (await import('./webhooks.js')).resendCommand(ids as string[], opts, io), {
        usage: ([ids], opts) => {
          const given = (ids as string[]).length > 0;
          if (!given && !(opts.workspace && opts.status)) return 'give delivery ids, or --workspace <slug> with --status dead|failed';
          if (given && (opts.status || opts.since || opts.subscription)) return 'give either delivery ids or --status/--since/--subscription, not both';
        },
      }),
    );

  program
    .command('import')
    .description('import products or orders from a CSV file into a workspace (- reads standard input)')
    .addArgument(new Argument('<kind>', 'what the file holds').choices(['products', 'orders']))
    .argument('<file>', 'the CSV file, or - for standard input')
    .requiredOption('--workspace <slug>', 'the workspace slug')
    .option('--dry-run', 'validate and report what the import would do; write nothing')
    .addOption(new Option('--on-error <mode>', 'skip: apply the good rows; abort: write nothing if any row fails').choices(['skip', 'abort']).default('skip'))
    .option('--json', 'print the report (data.import) as JSON')
    .action(
      run(async (opts, io, [kind, file]) => (await import('./import.js')).importCommand(kind as 'products' | 'orders', file as string, opts, io), {
        input: ([, file]) => (file === '-' ? undefined : (file as string)),
      }),
    );

  const workspace = program.command('workspace').description('manage workspaces');
  workspace
    .command('create')
    .description('create a workspace and its owner; prints the password (when generated) and the keys once')
    .requiredOption('--name <name>', 'workspace name')
    .requiredOption('--owner-email <email>', "owner's email address")
    .option('--password <password>', "owner's password (at least 10 characters; generated when omitted)")
    .option('--slug <slug>', 'workspace slug (derived from the name when omitted)')
    .option('--owner-name <name>', "owner's name")
    .action(run(async (opts, io) => (await import('./workspace.js')).createWorkspaceCommand(opts, io)));
  workspace
    .command('list')
    .description('list the workspaces: slug, name, status and number of users')
    .option('--json', 'print them as JSON')
    .action(run(async (opts, io) => (await import('./workspace.js')).listWorkspacesCommand(opts, io)));

  const user = program.command('user').description('manage user accounts');
  user
    .command('add')
    .description('add a user to a workspace; prints a password to hand over, or a set-password link when APP_URL is set')
    .requiredOption('--workspace <slug>', 'the workspace slug')
    .requiredOption('--email <email>', "the user's email address")
    .addOption(new Option('--role <role>', 'their role in the workspace').choices(['member', 'owner']).default('member'))
    .option('--name <name>', "the user's name")
    .action(run(async (opts, io) => (await import('./user.js')).addUserCommand(opts, io)));
  user
    .command('set-password')
    .description("set a user's password (generated and printed when omitted); signs the user out everywhere")
    .requiredOption('--email <email>', "the user's email address")
    .option('--password <password>', "the new password (at least 10 characters); '-' reads it from stdin")
    .action(run(async (opts, io) => (await import('./user.js')).setPasswordCommand(opts, io)));

  pointToHelp(program, 'quoting');
  return program;
}

/**
 * A usage error is one line ending with the help of the command that was mistyped (`quoting import --help`):
 * set on every command once all are defined, so a command added later gets it too. One line, as commander
 * puts "(Did you mean …?)" on a line of its own.
 */
function pointToHelp(command: Command, name: string): void {
  command.configureOutput({ ...command.configureOutput(), outputError: (text, write) => write(`${text.trim().replace(/\s*\n\s*/g, ' ')} (see '${name} --help')\n`) });
  for (const sub of command.commands) pointToHelp(sub, `${name} ${sub.name()}`);
}

/** This package's version (npm_package_version would be that of whichever package runs the script). */
function packageVersion(): string {
  const manifest = JSON.parse(fs.readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string };
  return manifest.version;
}

function portNumber(value: string): number {
  if (!/^\d{1,5}$/.test(value.trim()) || Number(value) > 65535) throw new InvalidArgumentError('expects a port number (0-65535).');
  return Number(value);
}

type Action = (opts: Opts, io: CommandIo, args: unknown[]) => Promise<void>;

interface RunOptions {
  /** Runs in this process only (serve, restore): never sent to a running server, refused inside one. */
  here?: boolean;
  /** A usage error found after commander's own checks (exit 2), before anything is sent or opened. */
  usage?: (args: unknown[], opts: Opts) => string | undefined;
  /** The file argument the command reads, if any: sent to a running server as bytes, never as a path. */
  input?: (args: unknown[]) => string | undefined;
}

/** The command's exit code when a running server ran it for us (its output has been copied already). */
class ServedExit extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`);
  }
}

/**
 * Wraps a command's action. Every command runs through here, so that on the embedded database a
 * command that needs it runs inside `quoting serve` when one holds DATA_DIR (see ./forward.ts):
 * commander has parsed the arguments by then, so usage errors are the caller's own.
 */
function runner(io: CommandIo, args: string[]) {
  return (action: Action, options: RunOptions = {}) =>
    async (...params: unknown[]) => {
      const command = params[params.length - 1] as Command;
      const positional = params.slice(0, -2);
      const opts = command.optsWithGlobals();
      const usage = options.usage?.(positional, opts);
      if (usage) command.error(`error: ${usage}`, { exitCode: 2, code: 'quoting.usage' });
      const { servedCommand } = await import('./context.js');
      if (options.here && servedCommand()) {
        throw new Error(`'quoting ${command.name()}' cannot run inside the server (process ${servedCommand()!.serverPid}) that already holds this DATA_DIR`);
      }
      if (!options.here && !servedCommand()) {
        const code = await (await import('./forward.js')).forwardToServer(opts, io, args, options.input?.(positional));
        if (code !== null) throw new ServedExit(code);
      }
      await action(opts, io, positional);
    };
}

/** Runs `quoting <args>` with `io` and returns the exit code: 0 ok, 1 failure (one `error:` line), 2 usage. */
export async function runProgram(args: string[], io: CommandIo): Promise<number> {
  try {
    await buildProgram(io, args).parseAsync(args, { from: 'user' });
    return 0;
  } catch (err) {
    return await exitCodeFor(err, io);
  }
}

export async function main(argv: string[]): Promise<void> {
  const io = processIo();
  const code = await runProgram(argv.slice(2), io);
  process.exitCode = io.closedOutputStatus ?? code;
}

async function exitCodeFor(err: unknown, io: CommandIo): Promise<number> {
  if (err instanceof ServedExit) return err.code;
  if (err instanceof CommanderError) {
    // commander already printed its message; help and version are not failures, but help shown
    // because a command is incomplete (`quoting workspace`) is a usage error like the others.
    return err.exitCode === 0 ? 0 : 2;
  }
  const { callerEnv } = await import('./context.js');
  io.stderr.write(`error: ${describe(err, callerEnv().LOG_LEVEL === 'debug')}\n`);
  return 1;
}

/** One readable line; the stack only with LOG_LEVEL=debug. */
function describe(err: unknown, debug: boolean): string {
  const e = err as { code?: string; message?: string; stack?: string };
  if (debug && e.stack) return e.stack;
  const message = (e.message ?? String(err)).split('\n')[0];
  if (e.code === 'ECONNREFUSED' || /ECONNREFUSED/.test(message)) return `cannot reach the database (${message}); check DATABASE_URL`;
  return message;
}
