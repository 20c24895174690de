import tseslint from 'typescript-eslint';

// The import direction is a lint rule, not a review comment: the core must run under plain Node
// (CLI, tests, browser mode), and the renderer may only reach the host through the typed contract.
const nodeBuiltins = [
  'node:*', 'fs', 'fs/*', 'path', 'os', 'child_process', 'net', 'tls', 'http', 'https', 'crypto',
  'worker_threads', 'stream', 'zlib', 'url', 'util', 'events', 'better-sqlite3',
];

const coreImports = {
  paths: [{ name: 'electron', message: 'Only electron/shell/ may import electron; the core runs under plain Node.' }],
  patterns: [{ group: ['electron/*'], message: 'Only electron/shell/ may import electron.' },
    { group: ['**/shell/**'], message: 'The core never depends on the Electron shell; imports go shell -> core.' }],
};

export default tseslint.config(
  { ignores: ['node_modules/**', 'dist/**', 'out/**', 'test-output/**'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.tsx'],
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  {
    files: ['electron/**/*.ts'],
    ignores: ['electron/shell/**'],
    rules: { 'no-restricted-imports': ['error', coreImports] },
  },
  {
    files: ['electron/contract/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        ...coreImports,
        patterns: [...coreImports.patterns, { group: nodeBuiltins, message: 'The contract never touches Node: the renderer imports its values.' }],
      }],
    },
  },
  {
    files: ['renderer/**/*.ts', 'renderer/**/*.tsx'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: [{ name: 'electron', message: 'The renderer talks to the host through window.capsem only.' }],
        patterns: [{ group: nodeBuiltins, message: 'The renderer never touches Node: use the typed contract.' },
          { group: ['**/electron/**', '!**/electron/contract', '!**/electron/contract/**'], allowTypeImports: true, message: 'The renderer may import the contract, and only types from the rest of the core.' }],
      }],
    },
  },
);
