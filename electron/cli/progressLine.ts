import { stageDuration, stageLabel, type BuildStage } from '../contract/buildStages.ts';

/**
 * One report from a long job: which stage, a line for people, and the whole job's fraction done
 * (0..1); an image build adds each of its stages (several may run at once).
 */
export interface ProgressReport {
  readonly stage: string;
  readonly message: string;
  readonly fraction: number;
  readonly build?: readonly BuildStage[];
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

const percentOf = (fraction: number): number => Math.round(Math.min(1, Math.max(0, fraction)) * 100);

/** The stages running now, side by side: "downloading packages 63% · coding agents 20%"; null without a build. */
function runningStages(report: ProgressReport): string | null {
  const running = (report.build ?? []).filter((s) => s.state === 'running');
  if (running.length === 0) return null;
  return running.map((s) => `${stageLabel(s.stage)} ${percentOf(s.fraction)}%`).join(' · ');
}

export function formatProgress(report: ProgressReport, width = 0): string {
  const line = `[${String(percentOf(report.fraction)).padStart(3)}%] ${runningStages(report) ?? report.stage}: ${report.message}`;
  return width > 0 && line.length > width ? `${line.slice(0, Math.max(0, width - 1))}…` : line;
}

/** The line a finished build stage gets: "✓ root file system 1m12s"; one that was not needed (a reused root) says so. */
export function formatStageDone(stage: BuildStage): string {
  return `✓ ${stageLabel(stage.stage)} ${stage.state === 'skipped' ? '(skipped)' : stageDuration(stage.ms)}`;
}

/**
 * A TTY gets a single line redrawn in place; anything else (CI logs, pipes) gets a plain line when
 * the running stages change or another tenth of the job is done, so a log stays short and readable.
 * Each build stage that finishes gets a ✓ line of its own, with its time, above the live line.
 */
export function progressLine(out: ProgressOutput): ProgressLine {
  let drawn = false;
  let lastStage = '';
  let lastTenth = -1;
  const announced = new Set<string>();
  const clear = (): void => {
    if (drawn) out.write('\r\x1b[K');
    drawn = false;
  };
  return {
    update(report) {
      for (const stage of report.build ?? []) {
        if ((stage.state !== 'done' && stage.state !== 'skipped') || announced.has(stage.stage)) continue;
        announced.add(stage.stage);
        clear();
        out.write(`${formatStageDone(stage)}\n`);
      }
      if (out.isTTY) {
        out.write(`\r\x1b[K${formatProgress(report, (out.columns ?? 80) - 1)}`);
        drawn = true;
        return;
      }
      const running = runningStages(report);
      // Between stages nothing runs: the ✓ lines said it all, until the closing report.
      if (running === null && (report.build ?? []).length > 0 && report.stage !== 'done') return;
      const stage = running?.replace(/ \d+%/g, '') ?? report.stage;
      const tenth = Math.floor(Math.min(1, Math.max(0, report.fraction)) * 10);
      if (stage === lastStage && tenth <= lastTenth) return;
      lastStage = stage;
      lastTenth = tenth;
      out.write(`${formatProgress(report)}\n`);
    },
    finish(message) {
      clear();
      if (message !== undefined) out.write(`${message}\n`);
    },
  };
}
