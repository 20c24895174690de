import { mkdtempSync, readdirSync, rmdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ensureHomeRoot, ensurePrivateDir, type CapsemHome } from '../store/paths.ts';

// Scratch space for export snapshots and import staging. It lives under CAPSEM_HOME/run so an
// imported session moves into run/sessions/ with one rename on the same filesystem, and it is
// private (0700) because it holds recorded bodies. Nothing is left behind: not even the parent
// folder, so a refused import leaves CAPSEM_HOME as it found it.

export interface StagingDir {
  readonly path: string;
  /** Removes the folder and whatever is still in it. */
  remove(): void;
}

export function stagingRoot(home: CapsemHome): string {
  return join(home.runDir, 'staging');
}

export function makeStagingDir(home: CapsemHome, purpose: string): StagingDir {
  const root = stagingRoot(home);
  ensureHomeRoot(home);
  ensurePrivateDir(home.runDir);
  ensurePrivateDir(root);
  const path = mkdtempSync(join(root, `${purpose}-`));
  return {
    path,
    remove() {
      rmSync(path, { recursive: true, force: true });
      removeStagingRootIfEmpty(home);
    },
  };
}

export function removeStagingRootIfEmpty(home: CapsemHome): void {
  const root = stagingRoot(home);
  try {
    if (readdirSync(root).length === 0) rmdirSync(root);
  } catch {
    // Already gone, or another export is using it: either way it is not ours to remove.
  }
}
