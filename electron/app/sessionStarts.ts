import type { StartProgress } from '../contract/appContract.ts';
import type { SessionId } from '../contract/ids.ts';
import type { StartReporter } from '../vm/vmHost.ts';
import type { VmSession } from '../vm/vmSession.ts';

// Starts from the window run in the background: the call that asked answers with the session's
// id as soon as it is entered, and the start's stages (the image build with its stage and share
// done, the VM's boot) reach the window as they happen, so a two-minute image build is seen, not
// waited on in silence. A start that fails says why; the session itself ends crashed with that
// reason and frees its name (VmSession.start), so nothing is left half made.

export interface StartSink {
  /** The session is entered (it is in the list from now on) and starting. */
  entered(id: SessionId, progress: StartProgress): void;
  progress(id: SessionId, progress: StartProgress): void;
  ready(id: SessionId): void;
  failed(id: SessionId, message: string): void;
}

/** Progress within one step is sent at most this often; a new step is sent at once. */
const PROGRESS_INTERVAL_MS = 200;

/** Failed starts remembered, newest kept, so a tab that asks after the failure still hears why. */
const FAILURES_KEPT = 64;

interface Starting {
  progress: StartProgress;
  sentAt: number;
  readonly outcome: Promise<StartOutcome>;
}

export type StartOutcome = { readonly session: VmSession } | { readonly error: Error };

/**
 * What makes a report a new step, sent at once: a build's stages changing state, or the step
 * changing while at most one stage runs (with stages running side by side, each report may come
 * from another, which is not news).
 */
function stepKey(progress: StartProgress): string {
  const states = progress.build.map((s) => s.state);
  return `${progress.phase}:${states.join()}:${states.filter((s) => s === 'running').length > 1 ? '' : progress.step}`;
}

export class SessionStarts {
  private readonly starting = new Map<SessionId, Starting>();
  private readonly failures = new Map<SessionId, Error>();

  constructor(private readonly sink: StartSink) {}

  /**
   * Runs `start` and resolves with the session's id once it is entered (or, for a session that
   * needed no start, once `start` returns it); rejects only when it failed before that, with
   * nothing entered. Later failures go to the sink.
   */
  begin(start: (report: StartReporter) => Promise<VmSession>): Promise<SessionId> {
    return new Promise((resolve, reject) => {
      let id: SessionId | null = null;
      let settle!: (outcome: StartOutcome) => void;
      const outcome = new Promise<StartOutcome>((r) => (settle = r));
      const report: StartReporter = {
        registered: (entered) => {
          id = entered;
          this.failures.delete(entered);
          const progress: StartProgress = { phase: 'boot', step: 'session', message: 'starting the session', fraction: null, build: [] };
          this.starting.set(entered, { progress, sentAt: Date.now(), outcome });
          this.sink.entered(entered, progress);
          resolve(entered);
        },
        progress: (p) =>
          id &&
          this.update(id, {
            phase: 'image',
            step: p.stage,
            message: p.message,
            fraction: Math.min(1, Math.max(0, p.fraction)),
            build: p.build,
          }),
        status: (line) => id && this.update(id, { phase: 'boot', step: 'vm', message: line, fraction: null, build: [] }),
      };
      start(report).then(
        (session) => {
          this.starting.delete(session.id);
          settle({ session });
          resolve(session.id);
          if (id) this.sink.ready(id);
        },
        (err: unknown) => {
          const error = err instanceof Error ? err : new Error(String(err));
          settle({ error });
          if (!id) return reject(error);
          this.starting.delete(id);
          this.failures.set(id, error);
          for (const old of this.failures.keys()) {
            if (this.failures.size <= FAILURES_KEPT) break;
            this.failures.delete(old);
          }
          this.sink.failed(id, error.message);
        },
      );
    });
  }

  /** What a start under way is doing, or null. */
  progressOf(id: SessionId): StartProgress | null {
    return this.starting.get(id)?.progress ?? null;
  }

  /** How a start under way ends, how a recent one failed, or null. */
  outcomeOf(id: SessionId): Promise<StartOutcome> | null {
    const failure = this.failures.get(id);
    if (failure) return Promise.resolve({ error: failure });
    return this.starting.get(id)?.outcome ?? null;
  }

  /** A start is under way for this session. */
  isStarting(id: SessionId): boolean {
    return this.starting.has(id);
  }

  private update(id: SessionId, progress: StartProgress): void {
    const entry = this.starting.get(id);
    if (!entry) return;
    const now = Date.now();
    const newStep = stepKey(entry.progress) !== stepKey(progress);
    entry.progress = progress;
    if (!newStep && now - entry.sentAt < PROGRESS_INTERVAL_MS) return;
    entry.sentAt = now;
    this.sink.progress(id, progress);
  }
}
