import { randomBytes } from 'node:crypto';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { BuildStageSchema } from '../../contract/appContract.ts';
import type { StageReport } from './buildProgress.ts';
import { acquireLockFile, LockHolderSchema, lockHolder, releaseLockFile, unlinkQuietly, type LockHolder } from '../../platform/lockFile.ts';

// One build of an image kind at a time across every process of the user (two homes, the app and
// the CLI): the builder holds `.build-<kind>.lock` beside the images and keeps `.build-<kind>.progress`
// current, so a process that wants the same image waits, shows the builder's progress, and takes
// over if the builder dies.

const BuildLockSchema = LockHolderSchema.extend({ kind: z.string() });
export type BuildLockHolder = z.infer<typeof BuildLockSchema>;

/** The builder's last report, as waiters read it. */
export const BuildProgressSchema = z.object({
  stage: z.string(),
  message: z.string(),
  fraction: z.number().min(0).max(1),
  stageFraction: z.number().min(0).max(1),
  build: z.array(BuildStageSchema),
});
export type BuildProgressRecord = z.infer<typeof BuildProgressSchema>;

/** The progress file is rewritten at most this often, besides every change of a stage's state. */
const PROGRESS_INTERVAL_MS = 250;

function paths(root: string, kind: string): { lock: string; progress: string } {
  return { lock: join(root, `.build-${kind}.lock`), progress: join(root, `.build-${kind}.progress`) };
}

export interface HeldBuildLock {
  /** Publishes the build's progress for waiters (throttled; a stage's state change always goes out). */
  progress(report: StageReport<string>): void;
  release(): void;
}

export type BuildLockResult =
  { readonly acquired: true; readonly lock: HeldBuildLock } | { readonly acquired: false; readonly holder: LockHolder };

export async function acquireBuildLock(root: string, kind: string): Promise<BuildLockResult> {
  const { lock, progress } = paths(root, kind);
  const record: BuildLockHolder = { ...lockHolder(), kind };
  const result = await acquireLockFile(lock, record, BuildLockSchema);
  if (!result.acquired) return result;
  let writtenAt = 0;
  let states = '';
  return {
    acquired: true,
    lock: {
      progress(report) {
        const now = Date.now();
        const stateKey = report.build.map((s) => s.state).join();
        if (stateKey === states && now - writtenAt < PROGRESS_INTERVAL_MS) return;
        writtenAt = now;
        states = stateKey;
        const tmp = `${progress}.${randomBytes(4).toString('hex')}.tmp`;
        writeFileSync(tmp, JSON.stringify(report), { mode: 0o600 });
        renameSync(tmp, progress);
      },
      release() {
        unlinkQuietly(progress);
        releaseLockFile(lock, record.token);
      },
    },
  };
}

/** The running build's last report, or null before its first (or after it ended). */
export function readBuildProgress(root: string, kind: string): BuildProgressRecord | null {
  try {
    const parsed = BuildProgressSchema.safeParse(JSON.parse(readFileSync(paths(root, kind).progress, 'utf8')));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}
