import type { ExportLedger, QueuedBatch } from './exportLedger.ts';
import { sendOtlp, type SendOutcome } from './otlpSender.ts';

// Sends an endpoint's queued bodies, oldest first, one at a time. A body the endpoint did not
// take stays queued and is tried again after a pause that doubles from 1 s to a minute (or what
// Retry-After asks, up to 5 minutes); the loop waits for new bodies when the queue is empty. It
// never holds up the recording: it runs beside it and only reads the ledger.

const FIRST_PAUSE_MS = 1_000;
const LONGEST_PAUSE_MS = 60_000;
const LONGEST_RETRY_AFTER_MS = 300_000;

export type SendEvent =
  | { readonly kind: 'sent'; readonly spans: number; readonly rejected: number }
  | { readonly kind: 'retry'; readonly reason: string; readonly pauseMs: number; readonly attempts: number }
  | { readonly kind: 'refused'; readonly spans: number; readonly reason: string };

export interface SendLoopOptions {
  readonly headers: Readonly<Record<string, string>>;
  readonly timeoutMs?: number;
  readonly onEvent?: (event: SendEvent) => void;
  /** Pauses between tries, for tests that cannot wait a minute. */
  readonly firstPauseMs?: number;
}

export class SendLoop {
  private wake: (() => void) | null = null;
  private stopped = false;
  private failures = 0;
  private readonly done: Promise<void>;
  private idleWaiters: (() => void)[] = [];
  private idle = false;

  constructor(
    private readonly ledger: ExportLedger,
    private readonly url: URL,
    private readonly options: SendLoopOptions,
  ) {
    this.done = this.run();
  }

  /** Something new was queued. */
  kick(): void {
    this.wake?.();
  }

  /** Resolves when the queue is empty (true), or at `deadline` (false). */
  async drained(deadlineMs: number): Promise<boolean> {
    this.kick();
    if (this.idle && this.ledger.status(this.url.href).queuedBatches === 0) return true;
    let timer: NodeJS.Timeout | undefined;
    const empty = new Promise<boolean>((resolve) => this.idleWaiters.push(() => resolve(true)));
    const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), Math.max(0, deadlineMs - Date.now()))));
    try {
      return await Promise.race([empty, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.kick();
    await this.done;
    this.ledger.release();
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.wake = null;
        resolve();
      }, ms);
      this.wake = () => {
        clearTimeout(timer);
        this.wake = null;
        resolve();
      };
    });
  }

  private async run(): Promise<void> {
    const endpoint = this.url.href;
    while (!this.stopped) {
      const batch = this.ledger.claimNext(endpoint);
      if (batch === null) {
        this.idle = true;
        for (const waiter of this.idleWaiters.splice(0)) waiter();
        await this.pause(LONGEST_PAUSE_MS);
        continue;
      }
      this.idle = false;
      const outcome = await sendOtlp(this.url, this.options.headers, batch.body, this.options.timeoutMs);
      if (this.stopped && outcome.kind === 'retry') return;
      const pauseMs = this.settle(endpoint, batch, outcome);
      if (pauseMs > 0) await this.pause(pauseMs);
    }
  }

  /** Records the outcome in the ledger; returns how long to wait before the next try. */
  private settle(endpoint: string, batch: QueuedBatch, outcome: SendOutcome): number {
    const report = this.options.onEvent ?? (() => undefined);
    switch (outcome.kind) {
      case 'sent':
        this.failures = 0;
        this.ledger.sent(endpoint, batch, outcome.rejected, `the endpoint rejected them${outcome.message ? `: ${outcome.message}` : ''}`);
        report({ kind: 'sent', spans: batch.spans, rejected: outcome.rejected });
        return 0;
      case 'refused':
        this.failures = 0;
        this.ledger.refused(endpoint, batch, outcome.reason);
        report({ kind: 'refused', spans: batch.spans, reason: outcome.reason });
        return 0;
      case 'retry': {
        this.failures += 1;
        this.ledger.failed(batch);
        const backoff = Math.min(LONGEST_PAUSE_MS, (this.options.firstPauseMs ?? FIRST_PAUSE_MS) * 2 ** (this.failures - 1));
        const pauseMs =
          outcome.afterMs !== null ? Math.min(LONGEST_RETRY_AFTER_MS, outcome.afterMs) : backoff * (0.8 + Math.random() * 0.4);
        report({ kind: 'retry', reason: outcome.reason, pauseMs, attempts: batch.attempts + 1 });
        return pauseMs;
      }
    }
  }
}
