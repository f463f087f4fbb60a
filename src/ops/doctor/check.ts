import type { Config } from '../../config.js';
import type { Database } from '../../db/database.js';

export type Status = 'ok' | 'warn' | 'fail';

/** What one check found; `fix` says in one line what to do about a warn or a fail. */
export interface Finding {
  status: Status;
  message: string;
  fix?: string;
}

/** The database as doctor could open it, or why it could not. */
export type DatabaseAccess = { ok: true; database: Database; pending: string[] } | { ok: false; status: Status; reason: string; fix?: string };

export interface DoctorContext {
  /** Loaded from the environment without its invalid variables (they are reported by the configuration check). */
  config: Config;
  /** Invalid variables by name, with loadConfig's message. */
  invalid: Set<string>;
  configError?: string;
  /** Where the settings come from, for the fixes ("in /etc/quoting/quoting.env"). */
  settingsIn: string;
  /** The raw environment the settings were read from (to tell a value given from a default). */
  env: NodeJS.ProcessEnv;
  /** The pid of the `quoting serve` that runs these checks for another process (it holds the embedded database). */
  server?: number;
  /** Opened on first use and shared by the checks that need it. */
  database(): Promise<DatabaseAccess>;
}

export interface Check {
  id: string;
  title: string;
  /** Variables the check reads: when one of them is invalid, the check reports that instead of running. */
  reads?: string[];
  run(ctx: DoctorContext): Promise<Finding>;
}

export const ok = (message: string): Finding => ({ status: 'ok', message });
export const warn = (message: string, fix: string): Finding => ({ status: 'warn', message, fix });
export const fail = (message: string, fix: string): Finding => ({ status: 'fail', message, fix });
