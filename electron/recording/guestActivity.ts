import type { FsChange } from './fsEventRows.ts';
import type { SessionRecorder } from './sessionRecorder.ts';
import type { ExecRun } from './steps/commandRun.ts';

// What a VM session records besides its traffic, handed to the recording pipeline's steps: the
// guest's file changes (fs_events) and the commands the host runs in it (exec_events). What is
// left here is when a batch of file changes ends.

/**
 * The agent sends a batch of file changes as back-to-back frames of 256; a pause this long ends the
 * batch, and its summarised changes (.git/, node_modules/) become their rows.
 */
const FS_BATCH_QUIET_MS = 50;

export class GuestActivity {
  private fsBatchEnd: NodeJS.Timeout | null = null;

  constructor(private readonly recorder: Pick<SessionRecorder, 'event' | 'holdingFsChanges'>) {}

  fs(changes: readonly FsChange[]): void {
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
    this.recorder.event('fs', { batchEnd: true });
  }

  exec(run: ExecRun): void {
    this.recorder.event('exec', run);
  }
}
