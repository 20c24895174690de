import { randomUUID } from 'node:crypto';
import { linkSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { isSameProcessAlive, processStartTicks } from './processIdentity.ts';

// A lock file held by a process, between processes of one user. It is created whole or not at
// all: its content is written to a private temp file first and then hard-linked into place, and
// link(2) fails if the name exists (the exclusive create of O_EXCL, without a window in which a
// reader sees it empty). So of two processes linking at once exactly one wins. A lock whose
// process died (its pid gone, or reused by another program) is stale, and is taken over.

/** What every lock records of its holder; a lock's own fields come beside these. */
export const LockHolderSchema = z.object({
  pid: z.number().int().positive(),
  /** /proc start time of `pid`, so a reused pid is not mistaken for the holder; null without /proc. */
  procStart: z.string().nullable(),
  /** Unique per acquisition: names this lock in takeover claims and in release. */
  token: z.string().min(1),
});
export type LockHolder = z.infer<typeof LockHolderSchema>;

export interface LockOnDisk<T> {
  readonly record: T | null;
  /** Names this lock's generation: its token, or its inode when the content is unreadable. */
  readonly key: string;
}

export type LockResult<T> =
  | { readonly acquired: true; /** the dead holder whose lock was taken over */ readonly tookOver: T | null }
  | { readonly acquired: false; readonly holder: T };

const ATTEMPTS = 50;

/** This process, as a new lock's holder. */
export function lockHolder(): LockHolder {
  return { pid: process.pid, procStart: processStartTicks(process.pid), token: randomUUID() };
}

/** Whether the lock's holder still runs. */
export function holderAlive(holder: LockHolder): boolean {
  return isSameProcessAlive(holder.pid, holder.procStart);
}

/** Reads a lock file; null when there is none. One `schema` does not accept comes back with record null. */
export function readLockFile<T extends LockHolder>(path: string, schema: z.ZodType<T>): LockOnDisk<T> | null {
  let text: string;
  let ino: number;
  try {
    ino = statSync(path).ino;
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  const parsed = schema.safeParse(safeJson(text));
  return parsed.success ? { record: parsed.data, key: parsed.data.token } : { record: null, key: `ino-${ino}` };
}

/** Tries to take the lock at `path` with `record`. Never waits for a live holder: it reports the holder instead. */
export async function acquireLockFile<T extends LockHolder>(path: string, record: T, schema: z.ZodType<T>): Promise<LockResult<T>> {
  const staged = `${path}.${record.token}.new`;
  writeFileSync(staged, `${JSON.stringify(record)}\n`, { mode: 0o600, flag: 'wx' });
  let tookOver: T | null = null;
  try {
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      if (tryLink(staged, path)) return { acquired: true, tookOver };
      const current = readLockFile(path, schema);
      if (current === null) continue;
      if (current.record && holderAlive(current.record)) return { acquired: false, holder: current.record };
      if (removeStaleLock(path, current.key, schema)) tookOver = current.record ?? tookOver;
      else await sleep(5 + attempt * 2);
    }
  } finally {
    unlinkQuietly(staged);
  }
  throw new Error(`cannot take the lock ${path}: it keeps changing under us`);
}

/** Removes the lock if it is still the one taken with `token`; true when it was. */
export function releaseLockFile(path: string, token: string): boolean {
  if (readLockFile(path, LockHolderSchema)?.key !== token) return false;
  unlinkQuietly(path);
  return true;
}

function tryLink(from: string, to: string): boolean {
  try {
    linkSync(from, to);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
}

/**
 * Removes the dead lock `key`, unless someone else is already doing so. Only the process that
 * created the claim file for a lock generation may unlink it, so two processes that both judged
 * the same lock stale cannot remove each other's fresh lock. Returns false when another claim is live.
 */
function removeStaleLock<T extends LockHolder>(lockPath: string, key: string, schema: z.ZodType<T>): boolean {
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
    if (readLockFile(lockPath, schema)?.key === key) unlinkQuietly(lockPath);
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

export function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}
