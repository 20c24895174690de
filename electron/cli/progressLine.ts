/** One report from a long job: which stage, a line for people, and the whole job's fraction done (0..1). */
export interface ProgressReport {
  readonly stage: string;
  readonly message: string;
  readonly fraction: number;
}

export interface ProgressLine {
  update(report: ProgressReport): void;
  /** Ends the line (on a TTY) and prints a closing message, if any. */
  finish(message?: string): void;
}

interface ProgressOutput {
  write(text: string): unknown;
  readonly isTTY?: boolean;
  readonly columns?: number;
}

export function formatProgress(report: ProgressReport, width = 0): string {
  const percent = Math.round(Math.min(1, Math.max(0, report.fraction)) * 100);
  const line = `[${String(percent).padStart(3)}%] ${report.stage}: ${report.message}`;
  return width > 0 && line.length > width ? `${line.slice(0, Math.max(0, width - 1))}…` : line;
}

/**
 * A TTY gets a single line redrawn in place; anything else (CI logs, pipes) gets a plain line when
 * the stage changes or another tenth of the job is done, so a log stays short and readable.
 */
export function progressLine(out: ProgressOutput): ProgressLine {
  let drawn = false;
  let lastStage = '';
  let lastTenth = -1;
  return {
    update(report) {
      if (out.isTTY) {
        out.write(`\r\x1b[K${formatProgress(report, (out.columns ?? 80) - 1)}`);
        drawn = true;
        return;
      }
      const tenth = Math.floor(Math.min(1, Math.max(0, report.fraction)) * 10);
      if (report.stage === lastStage && tenth <= lastTenth) return;
      lastStage = report.stage;
      lastTenth = tenth;
      out.write(`${formatProgress(report)}\n`);
    },
    finish(message) {
      if (drawn) out.write('\r\x1b[K');
      drawn = false;
      if (message !== undefined) out.write(`${message}\n`);
    },
  };
}
