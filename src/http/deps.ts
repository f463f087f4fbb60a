import type { Knex } from 'knex';
import type { Config } from '../config.js';
import type { Mailer } from '../mail/mailer.js';

/** What the areas' routes need from the outside world; built by `quoting serve` or by a test. */
export interface AppDeps {
  db: Knex;
  config: Config;
  mailer: Mailer | null;
  /** Tests only: see `ApiOptions.checkResponses` in api.ts. */
  checkResponses?: (problem: string) => void;
}
