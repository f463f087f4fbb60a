import { readdirSync } from 'node:fs';

// The compiled copies of the test files in test/: a test file moved or removed there leaves its old copy in
// dist/test (tsc deletes nothing), and that copy must not run.
const files = readdirSync('test', { recursive: true })
  .filter((file) => file.endsWith('.test.ts'))
  .map((file) => `dist/test/${file.replace(/\.ts$/, '.js')}`);

export default {
  files,
  timeout: '10m',
  concurrency: 2,
  workerThreads: false,
};
