import { readdirSync, readFileSync } from 'node:fs';
import { defineConfig } from 'vitest/config';

// Two projects that scripts/run-tests.mjs runs side by side, each one file at a time: the files
// that boot real VMs (they use helpers/vmTestHome.ts; under TCG a guest keeps a core busy) and
// everything else. On this kind of 2-core machine vitest's default is one worker, which ran all
// files in a row; two VMs at once starve each other, so the VM files keep to one stream.
const ALL = ['test/unit/**/*.test.ts', 'test/integration/**/*.test.ts', 'test/e2e/**/*.test.ts'];
const BOOTS_VMS = ['test/integration', 'test/e2e']
  .flatMap((folder) => readdirSync(folder).map((name) => `${folder}/${name}`))
  .filter((file) => file.endsWith('.test.ts') && readFileSync(file, 'utf8').includes("from '../helpers/vmTestHome.ts'"));

const shared = {
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
      { test: { ...shared, name: 'host', include: ALL, exclude: BOOTS_VMS } },
    ],
  },
});
