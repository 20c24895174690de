import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// Three projects that scripts/run-tests.mjs runs, each one file at a time: first the files that boot
// real VMs (they use helpers/vmTestHome.ts; under TCG a guest keeps a core busy) beside everything
// else but the browser tests, then the browser tests alone (the renderer's scroll test measures
// frame times, which a guest beside it would spoil). On this kind of 2-core machine vitest's
// default is one worker, which ran all files in a row; two VMs at once starve each other, so the
// VM files keep to one stream.
const UNIT_AND_INTEGRATION = ['test/unit/**/*.test.ts', 'test/integration/**/*.test.ts'];
const BOOTS_VMS = ['test/integration']
  .flatMap((folder) => readdirSync(folder).map((name) => `${folder}/${name}`))
  .filter((file) => file.endsWith('.test.ts') && readFileSync(file, 'utf8').includes("from '../helpers/vmTestHome.ts'"));

const shared = {
  // Guest images are built once per checkout (the agent image takes minutes), never in the user's cache.
  // No app a test starts keeps a VM booted ahead: on 2 cores its boot would starve the test's own VM;
  // the tests of the spare ask for one (VmHost's spareVm) and the flag's message is tested on its own.
  env: { CAPSEM_IMAGE_CACHE: fileURLToPath(new URL('./.cache/images/', import.meta.url)), CAPSEM_SPARE_VM: '0' },
  testTimeout: 30_000,
  hookTimeout: 30_000,
  pool: 'forks' as const,
  maxWorkers: 1,
};

export default defineConfig({
  test: {
    reporters: ['default', './test/helpers/summaryReporter.ts'],
    projects: [
      { test: { ...shared, name: 'vm', include: BOOTS_VMS } },
      { test: { ...shared, name: 'host', include: UNIT_AND_INTEGRATION, exclude: BOOTS_VMS } },
      { test: { ...shared, name: 'e2e', include: ['test/e2e/**/*.test.ts'] } },
    ],
  },
});
