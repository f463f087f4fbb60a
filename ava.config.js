export default {
  files: ['dist/test/**/*.test.js'],
  timeout: '10m',
  concurrency: 2,
  workerThreads: false,
};
