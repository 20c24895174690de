import type { ChangeContents } from './changeContents.ts';
import type { FsChange } from './fsEventRows.ts';
import type { SessionRecorder } from './sessionRecorder.ts';
import type { ExecRun } from './steps/commandRun.ts';

// What a VM session records besides its traffic, handed to the recording pipeline's steps: the
// guest's file changes (fs_events) and the commands the host runs in it (exec_events). What is
// left here is when a batch of file changes ends, and, in a session with a workspace baseline,
// reading what each change left in the folder before its row is written.

/**
 * The agent sends a batch of file changes as back-to-back frames of 256; a pause this long ends the
 * batch, and its summarised changes (.git/, node_modules/) become their rows.
 */
const FS_BATCH_QUIET_MS = 50;

/** The agent sends its changes once the workspace has been quiet this long (DEBOUNCE_MS in native/agent/src/fswatch.c). */
const AGENT_QUIET_MS = 100;

/**
 * `changes` with their times on the host's clock. The guest's clock is set at boot and drifts
 * under TCG (21 s behind the host within a minute was seen on a loaded machine), and a change is
 * tied to the tool call running when it was made by the host's times of those calls. The last
 * change of a frame was made AGENT_QUIET_MS before the agent sent it; the others keep their
 * distance from it.
 */
export function onHostClock(changes: readonly FsChange[], arrivedMs: number): FsChange[] {
  const last = changes.reduce((max, c) => Math.max(max, c.ts_ms), -Infinity);
  return changes.map((c) => ({ ...c, ts_ms: arrivedMs - AGENT_QUIET_MS - (last - c.ts_ms) }));
}

export class GuestActivity {
  private fsBatchEnd: NodeJS.Timeout | null = null;
  /** File changes wait here while their contents are read: rows keep the order the agent sent them in. */
  private reads: Promise<void> = Promise.resolve();

  constructor(
    private readonly recorder: Pick<SessionRecorder, 'event' | 'holdingFsChanges' | 'lose'>,
    /** Reads each change's content; null in a session without a baseline, whose rows name no content. */
    private readonly contents: ChangeContents | null = null,
  ) {}

  fs(reported: readonly FsChange[]): void {
    const changes = onHostClock(reported, Date.now());
    const contents = this.contents;
    if (!contents) return this.recordFs(changes);
    this.reads = this.reads
      .then(() =>
        contents.read(changes).then(
          (read) => this.recordFs(read),
          (err: unknown) => {
            // The store could not keep a content (its disk): the changes are still rows, without it.
            this.recorder.lose(err);
            this.recordFs(changes);
          },
        ),
      )
      .catch((err: unknown) => this.recorder.lose(err));
  }

  private recordFs(changes: readonly FsChange[]): void {
    this.recorder.event('fs', { changes });
    if (!this.recorder.holdingFsChanges) return;
    if (this.fsBatchEnd) clearTimeout(this.fsBatchEnd);
    this.fsBatchEnd = setTimeout(() => this.endFsBatch(), FS_BATCH_QUIET_MS);
    this.fsBatchEnd.unref();
  }

  /** Writes the rows of the changes held for a summary (the batch has ended, or the session). */
  endFsBatch(): void {
    if (this.fsBatchEnd) clearTimeout(this.fsBatchEnd);
    this.fsBatchEnd = null;
    const end = (): void => this.recorder.event('fs', { batchEnd: true });
    if (!this.contents) return end();
    this.reads = this.reads.then(end).catch((err: unknown) => this.recorder.lose(err));
  }

  /** Resolves once every change handed over so far is a row (its content read). */
  settled(): Promise<void> {
    return this.reads;
  }

  exec(run: ExecRun): void {
    this.recorder.event('exec', run);
  }
}
