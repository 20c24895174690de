import { BodyTap } from '../../proxy/exchange.ts';

// A command the host ran in the guest, as the commands step reads it once it has ended.

/** The start of a command's output that exec_events keeps. */
export const OUTPUT_PREVIEW = 256;

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
  return new BodyTap(OUTPUT_PREVIEW * 4);
}
