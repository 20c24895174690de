import type { SendEvent } from './sendLoop.ts';
import type { SessionFacts } from './sessionSpans.ts';

// What the live export's thread is told, and what it reports back.

export interface LiveExportStart {
  /** CAPSEM_HOME. */
  readonly root: string;
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly content: boolean;
  readonly secrets: readonly string[];
  readonly version: string;
}

export type LiveExportMessage =
  | { readonly type: 'watch'; readonly facts: SessionFacts; readonly secrets: readonly string[] }
  | { readonly type: 'ended'; readonly facts: SessionFacts }
  | { readonly type: 'close'; readonly drainMs: number };

export type LiveExportReport =
  | { readonly type: 'queued'; readonly sessionId: string; readonly queued: number; readonly open: number }
  | { readonly type: 'failed'; readonly sessionId: string; readonly reason: string }
  | { readonly type: 'ended'; readonly sessionId: string }
  | { readonly type: 'send'; readonly event: SendEvent }
  | { readonly type: 'closed'; readonly drained: boolean; readonly queuedSpans: number };
