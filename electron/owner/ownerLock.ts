import { randomUUID } from 'node:crypto';
import { linkSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { ensureHomeRoot, ensurePrivateDir, type CapsemHome } from '../store/paths.ts';
import { isSameProcessAlive, processStartTicks } from '../platform/processIdentity.ts';
import { ownerPaths } from './ownerPaths.ts';

// The lock file is created whole or not at all: its content is written to a private temp file
// first and then hard-linked into place, and link(2) fails if the name exists. So a reader never
// sees a half-written lock, and of two processes linking at once exactly one wins.

const OwnerKindSchema = z.enum(['app', 'cli']);
export type OwnerKind = z.infer<typeof OwnerKindSchema>;

const OwnerRecordSchema = z.object({
  pid: z.number().int().positive(),
  startedAt: z.string(),
  kind: OwnerKindSchema,
  command: z.string(),
  socket: z.string(),
  /** /proc start time of `pid`, so a reused pid is not mistaken for the owner; null without /proc. */
  procStart: z.string().nullable(),
  /** Unique per acquisition: names this lock in takeover claims and in release. */
  token: z.string().min(1),
});
export type OwnerRecord = z.infer<typeof OwnerRecordSchema>;

export interface OwnerIdentity {
  readonly kind: OwnerKind;
  readonly command: string;
}

export type AcquireResult =
  | {
      readonly acquired: true;
      readonly lock: OwnerLock;
      /** the dead owner whose lock was taken over */ readonly tookOver: OwnerRecord | null;
    }
  | { readonly acquired: false; readonly holder: OwnerRecord };

interface LockOnDisk {
  readonly record: OwnerRecord | null;
  /** Names this lock's generation: its token, or its inode when the content is unreadable. */
  readonly key: string;
}

const ATTEMPTS = 50;

/** Reads the lock file; null when there is none. A lock that is not valid JSON comes back with record null. */
export function readOwnerLock(home: CapsemHome): LockOnDisk | null {
  return readLockFile(ownerPaths(home).lock);
}

/** Tries to become the owner of `home`. Never waits for a live owner: it reports the holder instead. */
export async function acquireOwnerLock(home: CapsemHome, who: OwnerIdentity): Promise<AcquireResult> {
  ensureHomeRoot(home);
  ensurePrivateDir(home.runDir);
  const paths = ownerPaths(home);
  const record: OwnerRecord = {
    pid: process.pid,
    startedAt: new Date().toISOString(),
    kind: who.kind,
    command: who.command,
    socket: paths.socket,
    procStart: processStartTicks(process.pid),
    token: randomUUID(),
  };
  const staged = `${paths.lock}.${record.token}.new`;
  writeFileSync(staged, `${JSON.stringify(record)}\n`, { mode: 0o600, flag: 'wx' });
  let tookOver: OwnerRecord | null = null;
  try {
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      if (tryLink(staged, paths.lock)) return { acquired: true, lock: new OwnerLock(paths.lock, record), tookOver };
      const current = readLockFile(paths.lock);
      if (current === null) continue;
      if (current.record && isSameProcessAlive(current.record.pid, current.record.procStart))
        return { acquired: false, holder: current.record };
      if (removeStaleLock(paths.lock, current.key)) tookOver = current.record ?? tookOver;
      else await sleep(5 + attempt * 2);
    }
  } finally {
    unlinkQuietly(staged);
  }
  throw new Error(`cannot take the owner lock ${paths.lock}: it keeps changing under us`);
}

/** The held lock. Released by `release()`, and on exit or SIGINT/SIGTERM/SIGHUP if the holder forgets. */
export class OwnerLock {
  #released = false;
  readonly #onExit = (): void => this.release();
  readonly #onSignal = (signal: NodeJS.Signals): void => {
    // Another listener means the program handles this signal and will exit on its own terms;
    // the exit hook releases then. Alone, we release and die of the signal as we would have.
    if (process.listenerCount(signal) > 1) return;
    this.release();
    process.kill(process.pid, signal);
  };

  constructor(
    readonly path: string,
    readonly record: OwnerRecord,
  ) {
    process.on('exit', this.#onExit);
    for (const signal of SIGNALS) process.on(signal, this.#onSignal);
  }

  get held(): boolean {
    return !this.#released;
  }

  /** Removes the lock (and the control socket only the holder may create) if it is still ours. */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    process.off('exit', this.#onExit);
    for (const signal of SIGNALS) process.off(signal, this.#onSignal);
    if (readLockFile(this.path)?.key !== this.record.token) return;
    unlinkQuietly(this.record.socket);
    unlinkQuietly(this.path);
  }
}

const SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

function tryLink(from: string, to: string): boolean {
  try {
    linkSync(from, to);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
}

function readLockFile(path: string): LockOnDisk | null {
  let text: string;
  let ino: number;
  try {
    ino = statSync(path).ino;
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  const parsed = OwnerRecordSchema.safeParse(safeJson(text));
  return parsed.success ? { record: parsed.data, key: parsed.data.token } : { record: null, key: `ino-${ino}` };
}

/**
 * Removes the dead lock `key`, unless someone else is already doing so. Only the process that
 * created the claim file for a lock generation may unlink it, so two processes that both judged
 * the same lock stale cannot remove each other's fresh lock. Returns false when another claim is live.
 */
function removeStaleLock(lockPath: string, key: string): boolean {
  const claim = `${lockPath}.takeover-${key}`;
  const claimRecord = { pid: process.pid, procStart: processStartTicks(process.pid) };
  const staged = `${claim}.${randomUUID()}.new`;
  writeFileSync(staged, JSON.stringify(claimRecord), { mode: 0o600, flag: 'wx' });
  try {
    if (!tryLink(staged, claim)) {
      const text = readQuietly(claim);
      if (text === null) return false;
      const other = ClaimSchema.safeParse(safeJson(text));
      // A claimer killed mid-takeover (a window of microseconds) would block this lock forever.
      if (!other.success || !isSameProcessAlive(other.data.pid, other.data.procStart)) unlinkQuietly(claim);
      return false;
    }
  } finally {
    unlinkQuietly(staged);
  }
  try {
    if (readLockFile(lockPath)?.key === key) unlinkQuietly(lockPath);
  } finally {
    unlinkQuietly(claim);
  }
  return true;
}

const ClaimSchema = z.object({ pid: z.number().int().positive(), procStart: z.string().nullable() });

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

function readQuietly(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}
