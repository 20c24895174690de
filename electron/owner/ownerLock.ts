import { z } from 'zod';
import { ensureHomeRoot, ensurePrivateDir, type CapsemHome } from '../store/paths.ts';
import { acquireLockFile, LockHolderSchema, lockHolder, readLockFile, unlinkQuietly, type LockOnDisk } from '../platform/lockFile.ts';
import { ownerPaths } from './ownerPaths.ts';

// One owner per CAPSEM_HOME: a lock file (platform/lockFile.ts) naming the owner's process and its
// control socket.

const OwnerKindSchema = z.enum(['app', 'cli']);
export type OwnerKind = z.infer<typeof OwnerKindSchema>;

const OwnerRecordSchema = LockHolderSchema.extend({
  startedAt: z.string(),
  kind: OwnerKindSchema,
  command: z.string(),
  socket: z.string(),
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

/** Reads the lock file; null when there is none. A lock that is not valid JSON comes back with record null. */
export function readOwnerLock(home: CapsemHome): LockOnDisk<OwnerRecord> | null {
  return readLockFile(ownerPaths(home).lock, OwnerRecordSchema);
}

/** Tries to become the owner of `home`. Never waits for a live owner: it reports the holder instead. */
export async function acquireOwnerLock(home: CapsemHome, who: OwnerIdentity): Promise<AcquireResult> {
  ensureHomeRoot(home);
  ensurePrivateDir(home.runDir);
  const paths = ownerPaths(home);
  const record: OwnerRecord = {
    ...lockHolder(),
    startedAt: new Date().toISOString(),
    kind: who.kind,
    command: who.command,
    socket: paths.socket,
  };
  const result = await acquireLockFile(paths.lock, record, OwnerRecordSchema);
  return result.acquired ? { acquired: true, lock: new OwnerLock(paths.lock, record), tookOver: result.tookOver } : result;
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
    if (readLockFile(this.path, OwnerRecordSchema)?.key !== this.record.token) return;
    unlinkQuietly(this.record.socket);
    unlinkQuietly(this.path);
  }
}

const SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
