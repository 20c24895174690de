// One VM of the agent image booted ahead, so the next Start adopts it instead of waiting for a
// boot. A spare is used once: taking it removes it from the pool whatever happens next. One that
// has died, stops answering, cannot end its warm-up or was booted from an image that is no longer the current one is
// discarded, never handed out; a replacement boots after a delay that doubles with each failure
// in a row (5 s up to 5 min), so a machine that cannot boot spares is not kept busy trying.

/** What the pool needs of a spare (PreparedVm, or a fake in tests). */
export interface Spare {
  /** Answers a ping within a moment. */
  alive(): Promise<boolean>;
  /** Ends what it does while it waits (a warm-up); false if it could not say it did. */
  quiesce(): Promise<boolean>;
  /** Ends it and removes what it left; never adopted after. */
  discard(): Promise<void>;
  /** Resolves when its VM has ended. */
  readonly ended: Promise<unknown>;
}

export interface SparePoolOptions<S extends Spare> {
  boot(): Promise<S>;
  /** Whether a live spare may still be adopted (its image is the current one). */
  fit(spare: S): boolean;
  /** Read at each decision: Settings and the flags can turn spares off while the app runs. */
  enabled(): boolean;
  /** Why a spare was discarded or could not boot, for the log. */
  onProblem?(message: string): void;
  readonly firstBackoffMs?: number;
  readonly maxBackoffMs?: number;
}

export const FIRST_BACKOFF_MS = 5_000;
export const MAX_BACKOFF_MS = 300_000;

export class SparePool<S extends Spare> {
  private spare: S | null = null;
  private booting: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private failures = 0;
  private closed = false;

  constructor(private readonly options: SparePoolOptions<S>) {}

  /** The spare waiting to be taken (not whether it is alive: `take` finds that out), or null. */
  get waiting(): S | null {
    return this.spare;
  }

  get ready(): boolean {
    return this.spare !== null;
  }

  /** Boots a spare after `delayMs` unless one is waiting, booting or already scheduled sooner. */
  schedule(delayMs: number): void {
    if (this.closed || this.spare || this.booting || !this.options.enabled()) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.boot();
    }, delayMs);
    this.timer.unref();
  }

  /** Resolves once no boot is under way (tests; shutting down). */
  async settled(): Promise<void> {
    while (this.booting) await this.booting;
  }

  private boot(): Promise<void> {
    if (this.closed || this.spare || this.booting || !this.options.enabled()) return Promise.resolve();
    this.booting = (async () => {
      let failure: string | null = null;
      try {
        const spare = await this.options.boot();
        if (this.closed || !this.options.enabled()) return void (await spare.discard());
        this.spare = spare;
        // Once taken it is its session's: its end is no concern of the pool's.
        void spare.ended.then(() => this.spare === spare && this.lost(spare, 'the VM booted ahead ended while it waited'));
      } catch (err) {
        failure = `the VM booted ahead did not boot: ${(err as Error).message}`;
      } finally {
        this.booting = null;
      }
      // After `booting` is cleared, or the retry would not be scheduled.
      if (failure) this.failed(failure);
    })();
    return this.booting;
  }

  /** A spare gone while waiting (or found dead or unfit on take): discarded and replaced after the backoff. */
  private lost(spare: S, why: string): void {
    if (this.spare === spare) this.spare = null;
    void spare.discard().catch(() => {});
    this.failed(why);
  }

  private failed(why: string): void {
    this.options.onProblem?.(why);
    this.failures += 1;
    const first = this.options.firstBackoffMs ?? FIRST_BACKOFF_MS;
    this.schedule(Math.min(first * 2 ** (this.failures - 1), this.options.maxBackoffMs ?? MAX_BACKOFF_MS));
  }

  /** The waiting spare when it is alive and fit, now the caller's alone; otherwise null (the caller boots its own). */
  async take(): Promise<S | null> {
    const spare = this.spare;
    this.spare = null;
    if (!spare) return null;
    if (!this.options.enabled()) {
      await spare.discard();
      return null;
    }
    if (!this.options.fit(spare)) {
      await spare.discard();
      this.options.onProblem?.('the VM booted ahead runs an image that is no longer the current one: discarded');
      return null;
    }
    if (!(await spare.alive())) {
      this.lost(spare, 'the VM booted ahead did not answer: discarded');
      return null;
    }
    if (!(await spare.quiesce())) {
      this.lost(spare, 'the VM booted ahead did not end its warm-up: discarded');
      return null;
    }
    this.failures = 0;
    return spare;
  }

  /** Discards the waiting spare (spares turned off, or the app ending); `schedule` boots one again later. */
  async drop(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.settled();
    const spare = this.spare;
    this.spare = null;
    await spare?.discard();
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.drop();
  }
}
