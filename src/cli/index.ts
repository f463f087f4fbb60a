import fs from 'node:fs';
import { Command, CommanderError, Option } from 'commander';

/**
 * The `quoting` program. Only commander is loaded up front; each command loads its own
 * modules when it runs, so `quoting --help` stays fast.
 */
export function buildProgram(): Command {
  const program = new Command('quoting')
    .description('Quotes, orders, customers, products and sales channels: a self-hosted, multi-tenant service.')
    .version(packageVersion(), '-V, --version')
    .addOption(new Option('--env-file <path>', 'read settings from this env file first (also QUOTING_ENV_FILE)'))
    .showSuggestionAfterError()
    .exitOverride()
    // One line per error: commander puts "(Did you mean …?)" on a line of its own.
    .configureOutput({ outputError: (text, write) => write(text.trim().replace(/\s*\n\s*/g, ' ') + " (see 'quoting --help')\n") });

  program
    .command('serve')
    .description('start the HTTP API (embedded database: applies pending migrations itself)')
    .option('-p, --port <port>', 'port to listen on (default: PORT or 3000)')
    .option('-H, --host <host>', 'address to bind (default: HOST or 127.0.0.1)')
    .option('--migrate', 'on PostgreSQL, apply pending migrations before starting')
    .action(run(async (opts) => (await import('./serve.js')).serve(opts)));

  program
    .command('migrate')
    .description('apply pending database migrations')
    .option('--status', 'list applied and pending migrations without applying anything')
    .action(run(async (opts) => (await import('./migrate.js')).migrate(opts)));

  program
    .command('rotate-keys')
    .description("issue a new public/secret key pair for a workspace (prints it once; the old keys stop working)")
    .requiredOption('--workspace <slug>', 'the workspace slug')
    .action(run(async (opts) => (await import('./workspace.js')).rotateKeysCommand(opts)));

  program
    .command('worker')
    .description('deliver due webhooks: one batch (for cron), or --watch to keep delivering')
    .option('--watch', 'keep running; pick up new deliveries as they are queued')
    .action(run(async (opts) => (await import('./webhooks.js')).workerCommand(opts)));

  const webhooks = program.command('webhooks').description('manage webhook deliveries');
  webhooks
    .command('resend')
    .description('put deliveries back on the queue: by id, or all of a workspace with a status')
    .argument('[delivery-id...]', 'delivery ids to re-queue')
    .option('--workspace <slug>', 'with --status: the workspace whose deliveries to re-queue')
    .option('--status <status>', 'dead or failed')
    .option('--since <iso-date>', 'only deliveries created at or after this time')
    .option('--subscription <id>', 'only deliveries of this subscription')
    .action(async (ids: string[], _opts: unknown, command: Command) => (await import('./webhooks.js')).resendCommand(ids, command.optsWithGlobals()));

  const workspace = program.command('workspace').description('manage workspaces');
  workspace
    .command('create')
    .description('create a workspace and its owner; prints the password (when generated) and the keys once')
    .requiredOption('--name <name>', 'workspace name')
    .requiredOption('--owner-email <email>', "owner's email address")
    .option('--password <password>', "owner's password (at least 10 characters; generated when omitted)")
    .option('--slug <slug>', 'workspace slug (derived from the name when omitted)')
    .action(run(async (opts) => (await import('./workspace.js')).createWorkspaceCommand(opts)));

  return program;
}

/** This package's version (npm_package_version would be that of whichever package runs the script). */
function packageVersion(): string {
  const manifest = JSON.parse(fs.readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string };
  return manifest.version;
}

type Action = (opts: Record<string, unknown>) => Promise<void>;

function run(action: Action) {
  return async (...args: unknown[]) => {
    const command = args[args.length - 1] as Command;
    await action(command.optsWithGlobals());
  };
}

export async function main(argv: string[]): Promise<void> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
  } catch (err) {
    process.exitCode = exitCodeFor(err);
  }
}

function exitCodeFor(err: unknown): number {
  if (err instanceof CommanderError) {
    // commander already printed its message; help and version are not failures, but help shown
    // because a command is incomplete (`quoting workspace`) is a usage error like the others.
    return err.exitCode === 0 ? 0 : 2;
  }
  process.stderr.write(`error: ${describe(err)}\n`);
  return 1;
}

/** One readable line; the stack only with LOG_LEVEL=debug. */
function describe(err: unknown): string {
  const e = err as { code?: string; message?: string; stack?: string };
  if (process.env.LOG_LEVEL === 'debug' && e.stack) return e.stack;
  const message = (e.message ?? String(err)).split('\n')[0];
  if (e.code === 'ECONNREFUSED' || /ECONNREFUSED/.test(message)) return `cannot reach the database (${message}); check DATABASE_URL`;
  return message;
}
