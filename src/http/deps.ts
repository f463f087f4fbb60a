import type { Knex } from 'knex';
import type { Config } from '../config.js';
import type { Mailer } from '../mail/mailer.js';
import type { SessionCache } from '../auth/session-cache.js';

/** What the HTTP app needs from the outside world; built by `quoting serve` or by a test. */
export interface AppDeps {
  db: Knex;
  config: Config;
  mailer: Mailer | null;
  /** Resolved sessions; null disables caching (every request reads the database). */
  sessionCache: SessionCache | null;
  /** Tests only: see `ApiOptions.checkResponses` in api.ts. */
  checkResponses?: (problem: string) => void;
}
