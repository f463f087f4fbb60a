import { z } from 'zod';
import { randomToken } from '../auth/crypto.js';
import { setPassword } from '../auth/service.js';
import { authChanged } from '../auth/session-cache.js';
import { emailInput, passwordInput } from '../schema/input.js';
import { parseInput } from '../schema/parse.js';
import { commandConfig, withDatabase } from './context.js';
import { readText, say, type CommandIo } from './io.js';

const setPasswordOptions = z.object({ email: emailInput, password: passwordInput.optional() });

/** For an operator: a forgotten password without mail, or the generated one of `workspace create`. */
export async function setPasswordCommand(opts: Record<string, unknown>, io: CommandIo): Promise<void> {
  const config = commandConfig(opts);
  // `--password -` reads it from stdin (first line), out of sight of `ps` and the shell history.
  const given = opts.password === '-' ? (await readText(io.stdin)).split(/\r?\n/)[0] : opts.password;
  const input = parseInput(setPasswordOptions, { email: opts.email, password: given });
  const password = input.password ?? randomToken(12);
  await withDatabase(
    config,
    async ({ knex }) => {
      const userId = await knex.transaction((trx) => setPassword(trx, input.email, password));
      await authChanged(knex, null, { userId }); // running servers drop the user's cached sessions
    },
    { needsSchema: true },
  );
  say(io.stdout, `Password of ${input.email} changed; the user is signed out everywhere.`);
  if (input.password === undefined) say(io.stdout, `Password:   ${password}   (generated)`);
}
