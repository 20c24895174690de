import type { BuildStage } from '../../contract/buildStages.ts';

// A build's stages as they go: which are pending, running (several at once when the build runs
// them in parallel) or done, each with its share done and its time. The whole build's fraction is
// the sum of each stage's share of the job (its span) times its own fraction, so two stages
// running at once both move the bar.

export interface StageReport<S extends string> {
  /** The stage that sent this report. */
  readonly stage: S;
  readonly message: string;
  /** The whole build's fraction done, 0..1. */
  readonly fraction: number;
  /** The reporting stage's own fraction done, 0..1. */
  readonly stageFraction: number;
  readonly build: readonly BuildStage[];
}

/** Each stage's share of the whole job, in any unit; listed in the order they are shown. */
export type StageWeights<S extends string> = Partial<Record<S, number>>;

interface Tracked {
  state: BuildStage['state'];
  fraction: number;
  startedAt: number;
  ms: number;
}

const clamp = (n: number): number => Math.min(1, Math.max(0, n));

export class BuildStages<S extends string> {
  readonly #stages = new Map<S, Tracked>();
  #lastMessage = '';

  constructor(
    private readonly weights: StageWeights<S>,
    private readonly emit: (report: StageReport<S>) => void,
    private readonly now: () => number = Date.now,
  ) {
    for (const stage of Object.keys(weights) as S[]) this.#stages.set(stage, { state: 'pending', fraction: 0, startedAt: 0, ms: 0 });
  }

  /** `stage` is running and `fraction` of it done. */
  report(stage: S, fraction: number, message: string): void {
    const tracked = this.#track(stage);
    if (tracked.state === 'pending') {
      tracked.state = 'running';
      tracked.startedAt = this.now();
    }
    if (tracked.state === 'running') tracked.fraction = Math.max(tracked.fraction, clamp(fraction));
    this.#lastMessage = message;
    this.#send(stage, message);
  }

  /** `stage` finished; one that never reported running was not needed (a reused root file system) and is skipped. */
  done(stage: S, message = this.#lastMessage): void {
    const tracked = this.#track(stage);
    if (tracked.state === 'done' || tracked.state === 'skipped') return;
    tracked.ms = tracked.state === 'running' ? this.now() - tracked.startedAt : 0;
    tracked.state = tracked.state === 'running' ? 'done' : 'skipped';
    tracked.fraction = 1;
    this.#send(stage, message);
  }

  /** Runs one stage, reporting it running, then done when `work` returns. */
  async run<T>(stage: S, message: string, work: (progress: (fraction: number, message: string) => void) => Promise<T> | T): Promise<T> {
    this.report(stage, 0, message);
    const result = await work((fraction, line) => this.report(stage, fraction, line));
    this.done(stage);
    return result;
  }

  snapshot(): BuildStage[] {
    const now = this.now();
    return [...this.#stages].map(([stage, t]) => ({
      stage,
      state: t.state,
      fraction: t.fraction,
      ms: t.state === 'running' ? Math.max(0, now - t.startedAt) : t.ms,
    }));
  }

  #track(stage: S): Tracked {
    let tracked = this.#stages.get(stage);
    if (!tracked) {
      tracked = { state: 'pending', fraction: 0, startedAt: 0, ms: 0 };
      this.#stages.set(stage, tracked);
    }
    return tracked;
  }

  #send(stage: S, message: string): void {
    let done = 0;
    let total = 0;
    for (const [name, t] of this.#stages) {
      const weight = this.weights[name] ?? 0;
      done += weight * t.fraction;
      total += weight;
    }
    this.emit({
      stage,
      message,
      fraction: total > 0 ? clamp(done / total) : 0,
      stageFraction: this.#stages.get(stage)!.fraction,
      build: this.snapshot(),
    });
  }
}
