import { BodyTap } from '../proxy/exchange.ts';
import type { SessionWriter } from '../store/sessionWriter.ts';
import { FsEventRows, type FsChange } from './fsEventRows.ts';

// What a VM session records besides its traffic: the guest's file changes as fs_events and the
// commands the host runs in it as exec_events.

/** The start of a command's output that exec_events keeps. */
const PREVIEW = 256;
/**
 * The agent sends a batch of file changes as back-to-back frames of 256; a pause this long ends the
 * batch, and its summarised changes (.git/, node_modules/) become their rows.
 */
const FS_BATCH_QUIET_MS = 50;

/** One command the host ran in the guest, as it ended. */
export interface ExecRun {
  readonly argv: readonly string[];
  readonly cwd: string | undefined;
  readonly started: Date;
  /** Its exit code or signal; null when it ended without one. */
  readonly status: { readonly code: number | null; readonly signal: string | null } | null;
  readonly durationMs: number;
  readonly out: BodyTap;
  readonly err: BodyTap;
  readonly failure: Error | null;
}

/** Collects a command's output for its exec_events row: enough for the preview, counting every byte. */
export function execOutputTap(): BodyTap {
  return new BodyTap(PREVIEW * 4);
}

/** The start of a command's output as text, for exec_events; null when it printed nothing. */
function previewOf(tap: BodyTap): string | null {
  return tap.total === 0 ? null : tap.body().bytes.toString('utf8').slice(0, PREVIEW);
}

export class GuestActivity {
  private readonly fsRows = new FsEventRows();
  private fsBatchEnd: NodeJS.Timeout | null = null;

  constructor(private readonly writer: Pick<SessionWriter, 'append'>) {}

  fs(changes: readonly FsChange[]): void {
    for (const row of this.fsRows.take(changes)) this.writer.append('fs_events', row);
    if (!this.fsRows.holding) return;
    if (this.fsBatchEnd) clearTimeout(this.fsBatchEnd);
    this.fsBatchEnd = setTimeout(() => this.endFsBatch(), FS_BATCH_QUIET_MS);
    this.fsBatchEnd.unref();
  }

  /** Writes the rows of the changes held for a summary (the batch has ended, or the session). */
  endFsBatch(): void {
    if (this.fsBatchEnd) clearTimeout(this.fsBatchEnd);
    this.fsBatchEnd = null;
    for (const row of this.fsRows.flush()) this.writer.append('fs_events', row);
  }

  exec(run: ExecRun): void {
    this.writer.append('exec_events', {
      timestamp: run.started.toISOString(),
      argv: JSON.stringify(run.argv),
      cwd: run.cwd ?? null,
      exit_code: run.status?.code ?? null,
      signal: run.status?.signal ?? null,
      duration_ms: run.durationMs,
      stdout_bytes: run.out.total,
      stderr_bytes: run.err.total,
      stdout_preview: previewOf(run.out),
      stderr_preview: previewOf(run.err),
      error_message: run.failure?.message ?? null,
    });
  }
}
