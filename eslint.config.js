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
// lists the folders it may import, and every other folder here is refused. The CLI and the app sit
// on top, as transports over everything below; the API is a transport over the session read model
// (sessions/). The owner serves the VM host's methods; the VM runs a session's recording
// (recording/), which drives the proxy; the proxy reads the policy (policy/: rules, addresses and
// the providers it adds), credentials, and parses traffic with telemetry/, where the provider table
// lives, which the credential broker reads its keys' hosts from. store/ holds the databases every capability writes or reads; contract/ is the bottom,
// imported by all and by the renderer. No folder here imports cli/ or app/; the shell, above them,
// is not listed (the core never imports it).
const FOLDER_DIRECTIONS = {
  cli: [
    'api',
    'archive',
    'dev',
    'owner',
    'vm',
    'recording',
    'proxy',
    'policy',
    'sessions',
    'credentials',
    'store',
    'telemetry',
    'contract',
  ],
  app: ['archive', 'owner', 'vm', 'proxy', 'policy', 'sessions', 'credentials', 'store', 'telemetry', 'contract'],
  api: ['sessions', 'policy', 'credentials', 'store', 'contract'],
  owner: ['vm', 'recording', 'proxy', 'policy', 'credentials', 'store', 'contract'],
  archive: ['sessions', 'store', 'telemetry', 'contract'],
  dev: ['store', 'telemetry', 'contract'],
  vm: ['recording', 'proxy', 'credentials', 'store', 'telemetry', 'contract'],
  recording: ['proxy', 'policy', 'credentials', 'store', 'telemetry', 'contract'],
  proxy: ['policy', 'credentials', 'store', 'telemetry', 'contract'],
  policy: ['credentials', 'store', 'telemetry', 'contract'],
  sessions: ['store', 'telemetry', 'contract'],
  credentials: ['store', 'telemetry', 'contract'],
  store: ['telemetry', 'contract'],
  telemetry: ['contract'],
  contract: [],
};

/** Single files a folder may import from a folder it otherwise may not. */
const DIRECTION_EXCEPTIONS = {
  // An export is stamped with the version owner.info reports.
  archive: ['owner/capsemVersion.ts'],
  // Browser mode serves CAPSEM_HOME's owner alone, checked as the API checks it.
  app: ['api/loopbackListener.ts'],
  // A session names the process that records it as the owner lock names its holder: pid and start time.
  store: ['owner/processIdentity.ts'],
};

const contractNodePattern = { group: nodeBuiltins, message: 'The contract never touches Node: the renderer imports its values.' };

function folderImports(folder) {
  const allowed = FOLDER_DIRECTIONS[folder];
  const refused = Object.keys(FOLDER_DIRECTIONS).filter((other) => other !== folder && !allowed.includes(other));
  const extra = folder === 'contract' ? [contractNodePattern] : [];
  const exceptions = (DIRECTION_EXCEPTIONS[folder] ?? []).map((file) => `!**/${file}`);
  const may = allowed.length > 0 ? `imports only ${allowed.map((f) => `${f}/`).join(', ')}` : 'imports no other folder';
  return {
    ...coreImports,
    patterns: [
      ...coreImports.patterns,
      ...extra,
      {
        group: [...refused.map((other) => `**/${other}/**`), ...exceptions],
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
