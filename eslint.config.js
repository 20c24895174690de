import tseslint from 'typescript-eslint';

// The import direction is a lint rule, not a review comment: the core must run under plain Node
// (CLI, tests, browser mode), and the renderer may only reach the host through the typed contract.
const nodeBuiltins = [
  'node:*',
  'fs',
  'fs/*',
  'path',
  'os',
  'child_process',
  'net',
  'tls',
  'http',
  'https',
  'crypto',
  'worker_threads',
  'stream',
  'zlib',
  'url',
  'util',
  'events',
  'better-sqlite3',
];

const coreImports = {
  paths: [{ name: 'electron', message: 'Only electron/shell/ may import electron; the core runs under plain Node.' }],
  patterns: [
    { group: ['electron/*'], message: 'Only electron/shell/ may import electron.' },
    { group: ['**/shell/**'], message: 'The core never depends on the Electron shell; imports go shell -> core.' },
  ],
};

// The directions between electron/'s folders, as VS Code's layer check states its own: each folder
// lists the folders it may import, and every other folder here is refused. Five layers, top down:
// - transports: the CLI and the app sit on top, over everything below; the API is a transport over
//   the session read model (sessions/), which the app and the CLI read through too.
// - capabilities: the owner serves the VM host's methods; the VM runs a session's recording
//   (recording/), which drives the proxy; the proxy reads the policy (policy/: rules, addresses
//   and the providers it adds) and credentials, and parses traffic with telemetry/, where the
//   provider table lives; archive/ exports and imports sessions, dev/ seeds sample ones; otel/
//   sends them to an OpenTelemetry backend, live (the recording starts it) and after the fact.
// - data: sessions/ reads what store/ holds (the databases every capability writes or reads);
//   changes/ keeps the workspace's contents (their store, the safe reader, diffs, reverts), which
//   the recorder writes and the read model reads; telemetry/ is the pure parsers the recorder (and
//   a foreign database's reader) runs.
// - platform: what the operating system says about this process and its peers (process identity,
//   the kernel socket table, the loopback listener, the Capsem version); any folder may import it
//   except contract/, and it imports none.
// - contract: the bottom, imported by all and by the renderer; it never touches Node.
// No folder here imports cli/ or app/; the shell, above them, is not listed (the core never imports it).
const FOLDER_DIRECTIONS = {
  cli: [
    'api',
    'archive',
    'dev',
    'owner',
    'vm',
    'recording',
    'otel',
    'proxy',
    'policy',
    'sessions',
    'changes',
    'credentials',
    'store',
    'telemetry',
    'platform',
    'contract',
  ],
  app: [
    'archive',
    'owner',
    'vm',
    'otel',
    'proxy',
    'policy',
    'sessions',
    'changes',
    'credentials',
    'store',
    'telemetry',
    'platform',
    'contract',
  ],
  // GET /v1/pipeline reads the recording pipeline's steps off the list the recorder runs.
  api: ['sessions', 'recording', 'policy', 'credentials', 'store', 'platform', 'contract'],
  owner: ['vm', 'recording', 'proxy', 'policy', 'credentials', 'store', 'platform', 'contract'],
  archive: ['sessions', 'changes', 'store', 'telemetry', 'platform', 'contract'],
  // The seeder makes sessions as the recorder does, through recording/'s pipeline, from exchanges
  // shaped as proxy/ hands them over; nothing below imports dev/, so the directions stay acyclic.
  dev: ['recording', 'proxy', 'changes', 'store', 'telemetry', 'platform', 'contract'],
  vm: ['recording', 'proxy', 'changes', 'credentials', 'store', 'telemetry', 'platform', 'contract'],
  recording: ['otel', 'proxy', 'policy', 'changes', 'credentials', 'store', 'telemetry', 'platform', 'contract'],
  // Sessions to an OpenTelemetry backend: read through the session read model, redacted with the keys credentials/ holds.
  otel: ['sessions', 'credentials', 'store', 'platform', 'contract'],
  proxy: ['policy', 'credentials', 'store', 'telemetry', 'platform', 'contract'],
  policy: ['credentials', 'store', 'telemetry', 'platform', 'contract'],
  sessions: ['changes', 'store', 'telemetry', 'platform', 'contract'],
  changes: ['store', 'platform', 'contract'],
  credentials: ['store', 'telemetry', 'platform', 'contract'],
  store: ['telemetry', 'platform', 'contract'],
  telemetry: ['platform', 'contract'],
  platform: [],
  contract: [],
};

const contractNodePattern = { group: nodeBuiltins, message: 'The contract never touches Node: the renderer imports its values.' };

function folderImports(folder) {
  const allowed = FOLDER_DIRECTIONS[folder];
  const refused = Object.keys(FOLDER_DIRECTIONS).filter((other) => other !== folder && !allowed.includes(other));
  const extra = folder === 'contract' ? [contractNodePattern] : [];
  const may = allowed.length > 0 ? `imports only ${allowed.map((f) => `${f}/`).join(', ')}` : 'imports no other folder';
  return {
    ...coreImports,
    patterns: [
      ...coreImports.patterns,
      ...extra,
      {
        group: refused.map((other) => `**/${other}/**`),
        message: `electron/${folder}/ ${may} (the folder directions in eslint.config.js).`,
      },
    ],
  };
}

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
    // The Node preload (resources/) is CommonJS: --require loads it in every worker thread, where
    // an --import preload is skipped.
    files: ['**/*.cjs'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    files: ['electron/**/*.ts'],
    ignores: ['electron/shell/**'],
    rules: { 'no-restricted-imports': ['error', coreImports] },
  },
  ...Object.keys(FOLDER_DIRECTIONS).map((folder) => ({
    files: [`electron/${folder}/**/*.ts`],
    rules: { 'no-restricted-imports': ['error', folderImports(folder)] },
  })),
  {
    files: ['renderer/**/*.ts', 'renderer/**/*.tsx'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [{ name: 'electron', message: 'The renderer talks to the host through window.capsem only.' }],
          patterns: [
            { group: nodeBuiltins, message: 'The renderer never touches Node: use the typed contract.' },
            {
              group: ['**/electron/**', '!**/electron/contract', '!**/electron/contract/**'],
              allowTypeImports: true,
              message: 'The renderer may import the contract, and only types from the rest of the core.',
            },
          ],
        },
      ],
    },
  },
);
