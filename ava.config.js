export default {
  files: ['dist/test/**/*.test.js'],
  timeout: '2m',
  concurrency: 2,
  workerThreads: false,
};
