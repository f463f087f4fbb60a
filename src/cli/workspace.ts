import { randomToken } from '../crypto.js';
import { nameInput } from '../auth/schema.js';
import { signUp } from '../auth/service.js';
import { emailInput, passwordInput } from '../schema/input.js';
import { parseInput } from '../schema/parse.js';
import { createWorkspaceBody } from '../workspaces/schema.js';
import { findWorkspaceBySlug, listWorkspaces, rotateKeys } from '../workspaces/service.js';
import { commandConfig, withDatabase } from './context.js';
import { say, type CommandIo } from './io.js';

/** The options named as the operator typed them, so a 422-style message names the flag. */
const createWorkspaceOptions = createWorkspaceBody.extend({ 'owner-email': emailInput, 'owner-name': nameInput.optional(), password: passwordInput.optional() });

export async function createWorkspaceCommand(opts: Record<string, unknown>, io: CommandIo): Promise<void> {
  const config = commandConfig(opts);
  const input = parseInput(createWorkspaceOptions, { name: opts.name, slug: opts.slug, 'owner-email': opts.ownerEmail, 'owner-name': opts.ownerName, password: opts.password });
  const { name, slug } = input;
  const email = input['owner-email'];
  const generated = input.password === undefined;
  const password = input.password ?? randomToken(12);
  const { workspace, keys } = await withDatabase(config, ({ knex }) =>
    knex.transaction((trx) => signUp(trx, { email, password, name: input['owner-name'] ?? '', workspace: { name, slug, trialDays: config.TRIAL_DAYS } })),
    { needsSchema: true, create: true },
  );
  say(io.stdout, `Workspace "${workspace.name}" created (slug ${workspace.slug}, status ${workspace.status}).`);
  say(io.stdout, `Owner:      ${input['owner-name'] ? `${input['owner-name']} <${email}>` : email}`);
  if (generated) say(io.stdout, `Password:   ${password}   (generated: change it with 'quoting user set-password' or POST /api/v1/auth/password)`);
  say(io.stdout, `Public key: ${keys.public_key}`);
  say(io.stdout, `Secret key: ${keys.secret_key}   (shown once: store it now)`);
}

export async function rotateKeysCommand(opts: Record<string, unknown>, io: CommandIo): Promise<void> {
  const config = commandConfig(opts);
  const slug = String(opts.workspace);
  const keys = await withDatabase(config, async ({ knex }) => {
    const workspace = await findWorkspaceBySlug(knex, slug);
    if (!workspace) throw new Error(`no workspace with slug "${slug}"`);
    // Running servers hear of it and drop what they cached of the old keys.
    return rotateKeys(knex, workspace.id);
  }, { needsSchema: true });
  say(io.stdout, `New keys for ${slug}; the old public and secret keys no longer work.`);
  say(io.stdout, `Public key: ${keys.public_key}`);
  say(io.stdout, `Secret key: ${keys.secret_key}   (shown once: store it now)`);
}

/** `quoting workspace list [--json]`: every workspace with its slug, name, status and number of users. */
export async function listWorkspacesCommand(opts: Record<string, unknown>, io: CommandIo): Promise<void> {
  const config = commandConfig(opts);
  const workspaces = await withDatabase(config, ({ knex }) => listWorkspaces(knex), { needsSchema: true });
  const rows = workspaces.map((w) => ({
    slug: w.slug,
    name: w.name,
    status: w.status,
    trial_ends_at: w.trial_ends_at ? w.trial_ends_at.toISOString() : null,
    users: w.users,
  }));
  if (opts.json) return say(io.stdout, JSON.stringify(rows, null, 2));
  if (rows.length === 0) return say(io.stdout, "No workspace yet: create one with 'quoting workspace create'.");
  const table = [
    ['SLUG', 'NAME', 'STATUS', 'USERS'],
    ...rows.map((r) => [r.slug, r.name, r.trial_ends_at && r.status === 'trialing' ? `trialing until ${r.trial_ends_at.slice(0, 10)}` : r.status, String(r.users)]),
  ];
  const widths = table[0].map((_, i) => Math.max(...table.map((row) => row[i].length)));
  for (const row of table) say(io.stdout, row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]))).join('  '));
}
