import { z } from 'zod';
import { randomToken } from '../crypto.js';
import { passwordResetLink } from '../auth/links.js';
import { nameInput } from '../auth/schema.js';
import { createPasswordReset, createUser, setPassword, WELCOME_LINK_MINUTES } from '../auth/service.js';
import { emailInput, passwordInput } from '../schema/input.js';
import { parseInput } from '../schema/parse.js';
import type { Role } from '../accounts.js';
import { findWorkspaceBySlug } from '../workspaces/service.js';
import { commandConfig, commandEnv, withDatabase } from './context.js';
import { readText, say, type CommandIo } from './io.js';

const setPasswordOptions = z.object({ email: emailInput, password: passwordInput.optional() });

/** For an operator: a forgotten password without mail, or the generated one of `workspace create`. */
export async function setPasswordCommand(opts: Record<string, unknown>, io: CommandIo): Promise<void> {
  const config = commandConfig(opts);
  // `--password -` reads it from stdin (first line), out of sight of `ps` and the shell history.
  const given = opts.password === '-' ? (await readText(io.stdin)).split(/\r?\n/)[0] : opts.password;
  const input = parseInput(setPasswordOptions, { email: opts.email, password: given });
  const password = input.password ?? randomToken(12);
  // Running servers hear of it and drop the user's cached sessions.
  await withDatabase(config, ({ knex }) => knex.transaction((trx) => setPassword(trx, input.email, password)), { needsSchema: true });
  say(io.stdout, `Password of ${input.email} changed; the user is signed out everywhere.`);
  if (input.password === undefined) say(io.stdout, `Password:   ${password}   (generated)`);
}

const addUserOptions = z.object({ email: emailInput, name: nameInput.optional() });

/**
 * `quoting user add`: an account in a workspace without mail. It prints a password to hand over, or, when
 * APP_URL says where the app is, a set-password link (a password-reset token that lasts as long as an invite).
 */
export async function addUserCommand(opts: Record<string, unknown>, io: CommandIo): Promise<void> {
  const config = commandConfig(opts);
  const input = parseInput(addUserOptions, { email: opts.email, name: opts.name });
  const role = opts.role as Role;
  const slug = String(opts.workspace);
  // The default APP_URL (http://HOST:PORT) is this machine's, which the new user cannot open.
  const appUrl = commandEnv().APP_URL?.trim() ? config.APP_URL : undefined;
  const password = randomToken(12);
  const { workspace, token } = await withDatabase(
    config,
    ({ knex }) =>
      knex.transaction(async (trx) => {
        const workspace = await findWorkspaceBySlug(trx, slug);
        if (!workspace) throw new Error(`no workspace with slug "${slug}"`);
        await createUser(trx, { email: input.email, password, name: input.name ?? '', workspaceId: workspace.id, role });
        const reset = appUrl ? await createPasswordReset(trx, input.email, WELCOME_LINK_MINUTES) : null;
        return { workspace, token: reset?.token };
      }),
    { needsSchema: true },
  );
  say(io.stdout, `User ${input.email} added to "${workspace.name}" (slug ${workspace.slug}) as ${role}.`);
  if (appUrl && token) {
    say(io.stdout, `Set-password link: ${passwordResetLink(appUrl, token)}   (send it to them: it works once, for ${WELCOME_LINK_MINUTES / 1440} days)`);
  } else {
    say(io.stdout, `Password:   ${password}   (shown once: hand it over; they can change it once signed in)`);
  }
}
