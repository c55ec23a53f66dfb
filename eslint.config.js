import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'cdk.out/', '.local/', 'coverage/', 'test-artifacts/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'off',
    },
  },
  {
    // CommonJS config files of tools (dependency-cruiser reads .cjs).
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { module: 'writable', require: 'readonly' } },
  },
  {
    files: ['examples/**/*.{js,mjs}', 'bin/*.mjs', 'scripts/*.mjs'],
    languageOptions: { globals: { console: 'readonly', process: 'readonly', fetch: 'readonly', document: 'readonly', window: 'readonly', URL: 'readonly' } },
  },
  {
    // Scripts served to browsers (the settings page): browser globals only.
    files: ['functions/*/page/**/*.js'],
    languageOptions: {
      globals: Object.fromEntries(['document', 'window', 'setInterval', 'clearTimeout', 'location', 'history', 'sessionStorage', 'navigator', 'fetch', 'URL', 'URLSearchParams',
        'Node', 'setTimeout', 'atob', 'CSS'].map((name) => [name, 'readonly'])),
    },
  },
);
