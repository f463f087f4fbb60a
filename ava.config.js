import { readdirSync } from 'node:fs';

// Files that use no database, or only the embedded one whichever the suite runs on: with TEST_DATABASE_URL set they
// would run exactly as they ran without it, so that run leaves them out (the installer's alone builds the program).
const databaseIndependent = new Set([
  'cli/install.test.ts',
  'code/dates.test.ts',
  'code/import-floors.test.ts',
  'contract/response-check.test.ts',
  'db/embedded-autovacuum.test.ts',
  'db/embedded-data-dir.test.ts',
  'db/embedded-list-paging.test.ts',
  'db/embedded-protocol.test.ts',
  'db/embedded-sessions.test.ts',
  'webhooks/outbound-addresses.test.ts',
]);
const onPostgres = Boolean(process.env.TEST_DATABASE_URL);

// The compiled copies of the test files in test/: a test file moved or removed there leaves its old copy in
// dist/test (tsc deletes nothing), and that copy must not run.
const files = readdirSync('test', { recursive: true })
  .filter((file) => file.endsWith('.test.ts') && !(onPostgres && databaseIndependent.has(file)))
  .map((file) => `dist/test/${file.replace(/\.ts$/, '.js')}`);

export default {
  files,
  timeout: '10m',
  concurrency: 2,
  workerThreads: false,
};
