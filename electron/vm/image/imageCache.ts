import { randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, linkSync, lstatSync, mkdirSync, readdirSync, realpathSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ensurePrivateDir } from '../../store/paths.ts';
import { MANIFEST_NAME } from './imageManifest.ts';

// The user's image cache (store/paths.ts imageCacheDir), and the images an older version left
// in CAPSEM_HOME/images: those are moved in by hard link (a copy across file systems), never
// built again. The old folder is left as it was; deleting it frees the space once nothing else
// links the files.

const IMAGE_DIR = /^[a-z][a-z0-9]*-[0-9a-f]{16}$/;

/** A hard link where it can be (same file system: no space, no time), else a copy. */
export function linkOrCopy(from: string, to: string): void {
  try {
    linkSync(from, to);
  } catch {
    copyFileSync(from, to);
  }
}

/** Makes the cache folder (0700) and brings in the images `legacyDir` holds that it lacks. */
export function ensureImageCache(cacheDir: string, legacyDir: string): void {
  ensurePrivateDir(cacheDir);
  if (!existsSync(legacyDir) || sameFolder(legacyDir, cacheDir)) return;
  for (const name of readdirSync(legacyDir)) {
    const from = join(legacyDir, name);
    if (!IMAGE_DIR.test(name) || existsSync(join(cacheDir, name)) || !existsSync(join(from, MANIFEST_NAME))) continue;
    importImage(from, cacheDir, name);
  }
}

function sameFolder(a: string, b: string): boolean {
  return realpathSync(a) === realpathSync(b);
}

/** Staged under a .tmp- name (removed by the next build if we die) and renamed in whole, as a build is. */
function importImage(from: string, cacheDir: string, name: string): void {
  const tmp = join(cacheDir, `.tmp-import-${name}-${process.pid}-${randomBytes(4).toString('hex')}`);
  mkdirSync(tmp, { mode: 0o755 });
  try {
    for (const file of readdirSync(from)) {
      if (lstatSync(join(from, file)).isFile()) linkOrCopy(join(from, file), join(tmp, file));
    }
    renameSync(tmp, join(cacheDir, name));
  } catch (err) {
    rmSync(tmp, { recursive: true, force: true });
    const code = (err as NodeJS.ErrnoException).code;
    // Another process imported (or built) the same image first.
    if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw err;
  }
}

/** Bytes the cache takes on disk: a file hard-linked into several images (a reused root file system) counts once. */
export function imageCacheBytes(cacheDir: string): number {
  const seen = new Set<number>();
  let bytes = 0;
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile()) {
        const stat = lstatSync(path);
        if (seen.has(stat.ino)) continue;
        seen.add(stat.ino);
        bytes += stat.blocks * 512;
      }
    }
  };
  if (existsSync(cacheDir)) walk(cacheDir);
  return bytes;
}
