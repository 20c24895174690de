import type { ChangeContents } from '../changes/changeContents.ts';
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

export class GuestActivity {
  private fsBatchEnd: NodeJS.Timeout | null = null;
  /** File changes wait here while their contents are read: rows keep the order the agent sent them in. */
  private reads: Promise<void> = Promise.resolve();

  constructor(
    private readonly recorder: Pick<SessionRecorder, 'event' | 'holdingFsChanges' | 'lose'>,
    /** Reads each change's content; null in a session without a baseline, whose rows name no content. */
    private readonly contents: ChangeContents | null = null,
  ) {}

  fs(changes: readonly FsChange[]): void {
    const contents = this.contents;
    if (!contents) return this.recordFs(changes);
    this.reads = this.reads.then(() =>
      contents.read(changes).then(
        (read) => this.recordFs(read),
        (err: unknown) => {
          // The store could not keep a content (its disk): the changes are still rows, without it.
          this.recorder.lose(err);
          this.recordFs(changes);
        },
      ),
    ).catch((err: unknown) => this.recorder.lose(err));
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
