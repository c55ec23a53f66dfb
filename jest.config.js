// ESM project: jest runs with --experimental-vm-modules (see package.json) and @swc/jest strips types.
const swc = ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'es6' } }];
const common = {
  extensionsToTreatAsEsm: ['.ts'],
  transform: { '^.+\\.ts$': swc },
  // NodeNext imports say `./x.js`; the source is `./x.ts`.
  moduleNameMapper: {
    '^(\\.{1,2}/.*)\\.js$': '$1',
    // Its ESM build imports JSON without an import attribute, which jest's ESM loader warns about.
    '^libphonenumber-js$': '<rootDir>/node_modules/libphonenumber-js/index.cjs',
  },
  // node's, with handler logs written straight to stdout/stderr held back unless a test fails.
  testEnvironment: '<rootDir>/test/support/quiet-environment.mjs',
};

export default {
  // SDK clients keep keep-alive sockets to the emulators open; nothing else outlives a test file.
  forceExit: true,
  // Longest files first, from jest's cache or, on a fresh clone, test/support/test-times.json.
  testSequencer: '<rootDir>/test/support/slow-first-sequencer.mjs',
  // Integration tests wait on retries and minute boundaries, and a loaded machine (two CPU-bound
  // processes beside the suite) runs them several times slower: the limit is a generous deadline
  // for a hung test, never a speed requirement. Unit tests finish in milliseconds anyway.
  testTimeout: 120_000,
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    { ...common, displayName: 'infra', testMatch: ['<rootDir>/test/infra/**/*.test.ts'] },
    // The bundles `cdk synth` writes, run as Lambda runs them (test/artifact/lambda-harness.ts).
    { ...common, displayName: 'artifact', testMatch: ['<rootDir>/test/artifact/**/*.test.ts'] },
    {
      ...common,
      displayName: 'integration',
      testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
      globalSetup: '<rootDir>/test/integration/global-setup.ts',
      setupFilesAfterEnv: ['<rootDir>/test/integration/support/stack-ready.ts'],
      globalTeardown: '<rootDir>/test/integration/global-teardown.ts',
    },
  ],
};
