import type { Worker } from 'node:worker_threads';
import { capsemVersion } from '../platform/capsemVersion.ts';
import { siblingModule, startModuleWorker } from '../store/moduleWorker.ts';
import type { CapsemHome } from '../store/paths.ts';
import { hostSecrets } from './hostSecrets.ts';
import type { LiveExportMessage, LiveExportReport, LiveExportStart } from './liveExportProtocol.ts';
import { otelTarget, type OtelTarget } from './otelTarget.ts';
import type { SessionFacts } from './sessionSpans.ts';

// Each session this process records, exported as it is recorded when an OTLP endpoint is set:
// a thread of its own (liveExportWorker.ts) reads and sends, so a backend that is down or slow
// costs the recorder nothing. The thread starts with the first session and ends with the last,
// after trying for a moment to send what is queued; what it could not send stays queued on disk
// for the next export.

/** How long the end of the last session waits for the queue to empty. */
const DRAIN_MS = 2_000;

export interface LiveExportOptions {
  /** What the thread reports, for a log or a status line. */
  readonly onReport?: (report: LiveExportReport) => void;
}

export class LiveOtelExport {
  private worker: Worker | null = null;
  private readonly sessions = new Set<string>();
  private closing: Promise<void> = Promise.resolve();

  constructor(
    private readonly home: CapsemHome,
    private readonly target: OtelTarget,
    private readonly env: NodeJS.ProcessEnv,
    private readonly options: LiveExportOptions = {},
  ) {}

  get endpoint(): string {
    return this.target.url.href;
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    const start: LiveExportStart = {
      root: this.home.root,
      url: this.target.url.href,
      headers: this.target.headers,
      content: this.target.content,
      secrets: hostSecrets(this.home, this.env),
      version: capsemVersion(),
    };
    const worker = startModuleWorker(siblingModule(import.meta.url, 'liveExportWorker'), { workerData: start, name: 'capsem-otel' });
    worker.on('message', (report: LiveExportReport) => this.options.onReport?.(report));
    worker.on('error', (err) => this.options.onReport?.({ type: 'failed', sessionId: '', reason: err.message }));
    this.worker = worker;
    return worker;
  }

  private post(message: LiveExportMessage): void {
    this.thread().postMessage(message);
  }

  /** Starts exporting a session being recorded; `standIns` are redacted wherever they show. */
  watch(facts: SessionFacts, standIns: readonly string[]): void {
    this.sessions.add(facts.id);
    this.post({ type: 'watch', facts, secrets: standIns });
  }

  /** The session has ended: its last spans and its root go out; the thread ends with the last session. */
  async ended(facts: SessionFacts): Promise<void> {
    if (!this.sessions.delete(facts.id) || !this.worker) return;
    this.post({ type: 'ended', facts });
    if (this.sessions.size === 0) await this.close();
  }

  /** Ends the thread once it has tried for DRAIN_MS to send what is queued. */
  close(): Promise<void> {
    const worker = this.worker;
    if (!worker) return this.closing;
    this.worker = null;
    this.closing = new Promise<void>((resolve) => {
      worker.once('exit', () => resolve());
      worker.postMessage({ type: 'close', drainMs: DRAIN_MS } satisfies LiveExportMessage);
    });
    return this.closing;
  }
}

/** The live exports of this process, by home and target: a target changed in Settings takes the next session. */
const exports = new Map<string, LiveOtelExport>();

/**
 * The live export of this process for `home`'s target as it is now, or null when no endpoint is
 * set. An endpoint that cannot be used is said on stderr, and recording goes on without export.
 */
export function liveOtelExport(
  home: CapsemHome,
  env: NodeJS.ProcessEnv = process.env,
  options: LiveExportOptions = {},
): LiveOtelExport | null {
  let target: OtelTarget | null;
  try {
    target = otelTarget(home, env);
  } catch (err) {
    process.stderr.write(`capsem: sessions are not exported to OpenTelemetry: ${(err as Error).message}\n`);
    return null;
  }
  if (target === null) return null;
  const key = JSON.stringify([home.root, target.url.href, target.headers, target.content]);
  let live = exports.get(key);
  if (!live) exports.set(key, (live = new LiveOtelExport(home, target, env, options)));
  return live;
}
