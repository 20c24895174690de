import { chmodSync, existsSync, mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { asSessionId, type SessionId } from '../contract/ids.ts';

/** Everything Capsem keeps lives under one folder, `CAPSEM_HOME` or `~/.capsem`. */
export interface CapsemHome {
  readonly root: string;
  readonly runDir: string;
  readonly sessionsRunDir: string;
  readonly mainDbPath: string;
}

export function capsemHome(env: NodeJS.ProcessEnv = process.env): CapsemHome {
  const root = resolve(env.CAPSEM_HOME && env.CAPSEM_HOME.length > 0 ? env.CAPSEM_HOME : join(homedir(), '.capsem'));
  return {
    root,
    runDir: join(root, 'run'),
    sessionsRunDir: join(root, 'run', 'sessions'),
    mainDbPath: join(root, 'sessions', 'main.db'),
  };
}

export interface SessionPaths {
  readonly id: SessionId;
  readonly dir: string;
  readonly dbPath: string;
  readonly ptyLogPath: string;
  readonly serialLogPath: string;
  readonly workspaceDir: string;
}

/** The session folder is keyed by id alone; the runtime check backs up the brand for callers from JS. */
export function sessionPaths(home: CapsemHome, id: SessionId): SessionPaths {
  const checked = asSessionId(id);
  const dir = join(home.sessionsRunDir, checked);
  return {
    id: checked,
    dir,
    dbPath: join(dir, 'session.db'),
    ptyLogPath: join(dir, 'pty.log'),
    serialLogPath: join(dir, 'serial.log'),
    workspaceDir: join(dir, 'workspace'),
  };
}

/** Folders Capsem makes inside CAPSEM_HOME hold session data: private to the user, 0700, whatever the umask says. */
export function ensurePrivateDir(path: string): void {
  mkdirSync(path, { recursive: true, mode: 0o700 });
  chmodSync(path, 0o700);
}

/**
 * CAPSEM_HOME itself is made 0700 only when Capsem creates it. A folder the user already had
 * (CAPSEM_HOME=$HOME/work, a shared folder) is theirs: its mode is left as they set it, and the
 * private folders inside it keep the sessions private.
 */
export function ensureHomeRoot(home: CapsemHome): void {
  if (mkdirSync(home.root, { recursive: true, mode: 0o700 }) !== undefined) chmodSync(home.root, 0o700);
}

export function ensureHome(home: CapsemHome): void {
  ensureHomeRoot(home);
  for (const dir of [home.runDir, home.sessionsRunDir, join(home.root, 'sessions')]) ensurePrivateDir(dir);
}

/**
 * Guest images belong to the user, not to one CAPSEM_HOME: an image takes minutes to build and
 * depends only on its recipe, so every home (and every app version with the same recipe) shares
 * one copy. `CAPSEM_IMAGE_CACHE`, else the XDG cache folder.
 */
export function imageCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.CAPSEM_IMAGE_CACHE && env.CAPSEM_IMAGE_CACHE.length > 0) return resolve(env.CAPSEM_IMAGE_CACHE);
  const xdg = env.XDG_CACHE_HOME && isAbsolute(env.XDG_CACHE_HOME) ? env.XDG_CACHE_HOME : join(homedir(), '.cache');
  return join(xdg, 'capsem', 'images');
}

/** Where images lived before the shared cache: they are imported from here, never rebuilt. */
export function legacyImagesDir(home: CapsemHome): string {
  return join(home.root, 'images');
}

/** SQLite creates a database and its -wal/-shm with the umask's mode; tighten them to 0600. */
export function makePrivateFiles(dbPath: string): void {
  for (const path of [dbPath, `${dbPath}-wal`, `${dbPath}-shm`]) {
    if (existsSync(path)) chmodSync(path, 0o600);
  }
}
