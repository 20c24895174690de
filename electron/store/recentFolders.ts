import { readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { ensureHomeRoot, type CapsemHome } from './paths.ts';

// The project folders sessions were started on, newest first, for the New session form to offer
// again. Only the owner of CAPSEM_HOME starts sessions, so one writer; the file is replaced whole,
// never left half-written. A file that does not parse is taken as no history, never as an error.

const FILE = 'recent-folders.json';
export const MAX_RECENT_FOLDERS = 8;
const MAX_PATH = 4096;

export interface RecentFolder {
  readonly path: string;
  /** The folder is still there (a session can be started on it). */
  readonly exists: boolean;
}

function read(home: CapsemHome): string[] {
  try {
    const parsed = JSON.parse(readFileSync(join(home.root, FILE), 'utf8')) as unknown;
    if (!Array.isArray(parsed)) return [];
    return parsed.filter((p): p is string => typeof p === 'string' && isAbsolute(p) && p.length <= MAX_PATH).slice(0, MAX_RECENT_FOLDERS);
  } catch {
    return [];
  }
}

/** Puts `folder` first in the list, dropping its older place and what falls off the end. */
export function rememberFolder(home: CapsemHome, folder: string): void {
  ensureHomeRoot(home);
  const folders = [folder, ...read(home).filter((p) => p !== folder)].slice(0, MAX_RECENT_FOLDERS);
  const path = join(home.root, FILE);
  const staged = `${path}.${process.pid}.tmp`;
  writeFileSync(staged, JSON.stringify(folders), { mode: 0o600 });
  renameSync(staged, path);
}

function isFolder(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

export function recentFolders(home: CapsemHome): RecentFolder[] {
  return read(home).map((path) => ({ path, exists: isFolder(path) }));
}
