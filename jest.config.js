// Three tiers: "unit" holds pure tests and integration tests of single packages against real servers the
// test starts itself; "e2e" runs whole processes (mink up style clusters) and runs one file at a time;
// "compose" runs the docker-compose deployment on real containers.
const transform = { '^.+\\.ts$': ['@swc/jest', { swcrc: true }] };
const moduleNameMapper = { '^@mink/([a-z0-9-]+)$': '<rootDir>/packages/$1/src/index.ts' };
module.exports = {
  projects: [
    {
      displayName: 'unit',
      rootDir: __dirname,
      testEnvironment: 'node',
      transform,
      moduleNameMapper,
      testMatch: ['<rootDir>/packages/*/src/**/*.spec.ts', '<rootDir>/apps/*/src/**/*.spec.ts', '<rootDir>/test/unit/**/*.spec.ts'],
      // No --forceExit: a handle left open fails the run with what it is (see the file), instead of hanging CI.
      globalTeardown: '<rootDir>/test/support/exit-watchdog.js',
    },
    {
      displayName: 'e2e',
      rootDir: __dirname,
      testEnvironment: 'node',
      transform,
      moduleNameMapper,
      testMatch: ['<rootDir>/test/e2e/**/*.e2e.ts'],
    },
    {
      // The docker-compose deployment on real containers (test/compose): builds the local images, one file at a time.
      displayName: 'compose',
      rootDir: __dirname,
      testEnvironment: 'node',
      transform,
      moduleNameMapper,
      testMatch: ['<rootDir>/test/compose/**/*.compose.ts'],
    },
  ],
};
