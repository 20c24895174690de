import { realpathSync } from 'node:fs';
import { isAbsolute, relative, sep } from 'node:path';

// Deciding whether one host folder lies inside another, on real paths: a symlink or a `..` must not
// make a home folder look like a project folder, or a socket's folder look outside a mount.

/** The real path, or the path as given where it cannot be resolved (it does not exist yet). */
export function realPathOr(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/** `outer` is `inner` or holds it; both real, absolute paths. */
export function folderHolds(outer: string, inner: string): boolean {
  const rel = relative(outer, inner);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}
