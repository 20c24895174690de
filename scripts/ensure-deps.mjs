// Runs before `npm start` and `npm test`: installs the Debian packages the VMs need (as root) and
// the locked npm packages when node_modules is missing or older than package-lock.json, so a
// fresh clone needs no other set-up step.
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ensureSystemPackages } from './ensure-system.mjs';

ensureSystemPackages();
const root = fileURLToPath(new URL('..', import.meta.url));
const installed = `${root}node_modules/.package-lock.json`;
const lock = `${root}package-lock.json`;
const stale = !existsSync(installed) || statSync(installed).mtimeMs < statSync(lock).mtimeMs;
if (stale) {
  // npm install, not npm ci: see .ci/run for why; both install what package-lock.json pins.
  console.error('capsem: installing npm packages from package-lock.json (builds better-sqlite3, about 2 minutes)...');
  const result = spawnSync('npm', ['install', '--no-audit', '--no-fund'], { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) {
    console.error('capsem: npm install failed; see the output above');
    process.exit(result.status ?? 1);
  }
}
