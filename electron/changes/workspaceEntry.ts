import { closeSync, constants, fstatSync, lstatSync, openSync, readlinkSync, readSync, realpathSync, type Stats } from 'node:fs';
import { createHash } from 'node:crypto';
import { dirname, join, sep } from 'node:path';
import { contentHash, KEPT_CONTENT_MAX, type ContentHash } from './contentStore.ts';

// One path of the shared workspace as the host reads it. Every path comes from the guest (or from
// an imported file), so it is checked before it is joined to the folder, and nothing is followed
// out of the folder: a symlink is kept as its target, never read through, and a file is read
// through a descriptor whose real path is checked after it is open (a guest can swap a folder for
// a link between a check and an open).

/** git's file modes: what a manifest row and a diff header say a path is. */
export const MODE_FILE = 0o100644;
export const MODE_EXECUTABLE = 0o100755;
export const MODE_SYMLINK = 0o120000;

/** A version of a workspace file: its content's hash in the content store and its git mode. */
export interface FileVersion {
  readonly hash: ContentHash;
  readonly mode: number;
}

export type WorkspaceEntry =
  | {
      readonly kind: 'file' | 'symlink';
      readonly mode: number;
      readonly size: number;
      readonly hash: ContentHash;
      /** The content, when it is at most KEPT_CONTENT_MAX (a symlink's is its target). */
      readonly content: Buffer | null;
    }
  | { readonly kind: 'dir' | 'missing' }
  /** Something that is not a workspace file (a fifo, a device, a path through a link out of the folder): named, never read. */
  | { readonly kind: 'other'; readonly reason: string };

export class HostilePathError extends Error {
  override name = 'HostilePathError';
}

/** A relative workspace path as the guest names it, refused when it could leave the folder. */
export function checkedRelativePath(path: string): string {
  if (path.length === 0 || path.length > 4096) throw new HostilePathError(`a workspace path of ${path.length} characters`);
  if (path.includes('\0')) throw new HostilePathError('a workspace path holding a NUL byte');
  if (path.startsWith('/')) throw new HostilePathError(`an absolute workspace path ${JSON.stringify(path.slice(0, 200))}`);
  for (const part of path.split('/'))
    if (part === '' || part === '.' || part === '..')
      throw new HostilePathError(`a workspace path with an empty, . or .. part: ${JSON.stringify(path.slice(0, 200))}`);
  return path;
}

const CHUNK = 1 << 20;

const inside = (root: string, real: string): boolean => real === root || real.startsWith(root.endsWith(sep) ? root : root + sep);

/** The real path an open descriptor reads (Linux: its /proc link), or null where the system cannot tell. */
function descriptorPath(fd: number): string | null {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    return null;
  }
}

function readOpenFile(fd: number, stats: Stats): { hash: ContentHash; content: Buffer | null; size: number } {
  if (stats.size <= KEPT_CONTENT_MAX) {
    // One byte more than the cap tells a file that grew since its stat from one that did not.
    const buffer = Buffer.alloc(stats.size + 1);
    let length = 0;
    for (let n = 1; n > 0 && length < buffer.length; length += n) n = readSync(fd, buffer, length, buffer.length - length, null);
    if (length <= KEPT_CONTENT_MAX) {
      const content = buffer.subarray(0, length);
      return { hash: contentHash(content), content, size: length };
    }
  }
  const hash = createHash('sha256');
  const chunk = Buffer.alloc(CHUNK);
  let size = 0;
  for (let n = readSync(fd, chunk, 0, CHUNK, 0); n > 0; n = readSync(fd, chunk, 0, CHUNK, size)) {
    hash.update(chunk.subarray(0, n));
    size += n;
  }
  return { hash: hash.digest('hex'), content: null, size };
}

/**
 * Reads `path` (checked by checkedRelativePath) under `root`, which must be a real path (as
 * realpathSync gives it).
 */
export function readWorkspaceEntry(root: string, path: string): WorkspaceEntry {
  const full = join(root, checkedRelativePath(path));
  let parent: string;
  try {
    parent = realpathSync(dirname(full));
  } catch {
    return { kind: 'missing' };
  }
  if (!inside(root, parent)) return { kind: 'other', reason: 'it lies through a symlink that leads out of the workspace' };
  let stats: Stats;
  try {
    stats = lstatSync(full);
  } catch {
    return { kind: 'missing' };
  }
  if (stats.isDirectory()) return { kind: 'dir' };
  if (stats.isSymbolicLink()) {
    let target: Buffer;
    try {
      target = readlinkSync(full, { encoding: 'buffer' });
    } catch {
      return { kind: 'missing' };
    }
    return { kind: 'symlink', mode: MODE_SYMLINK, size: target.length, hash: contentHash(target), content: target };
  }
  if (!stats.isFile()) return { kind: 'other', reason: 'it is not a regular file, a folder or a symlink' };
  let fd: number;
  try {
    fd = openSync(full, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return { kind: 'missing' };
  }
  try {
    const opened = fstatSync(fd);
    if (!opened.isFile()) return { kind: 'other', reason: 'it is not a regular file' };
    const real = descriptorPath(fd);
    if (real !== null && !inside(root, real)) return { kind: 'other', reason: 'it was moved out of the workspace while being read' };
    const read = readOpenFile(fd, opened);
    return { kind: 'file', mode: opened.mode & 0o111 ? MODE_EXECUTABLE : MODE_FILE, ...read };
  } finally {
    closeSync(fd);
  }
}
