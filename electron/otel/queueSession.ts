import type { Resource } from '@opentelemetry/resources';
import type { SessionEventStore } from '../sessions/sessionEventStore.ts';
import type { ExportLedger } from './exportLedger.ts';
import { encodeSpans } from './otlpEncoding.ts';
import type { OtelTarget } from './otelTarget.ts';
import { redactTrace, type Redactor } from './secretRedaction.ts';
import { readSessionSpans, type SessionFacts } from './sessionSpans.ts';

// A session's spans that have ended and were never queued for the target, redacted, encoded and
// queued: the one path for the live export and `capsem otel export` alike.

export interface QueuedSession {
  /** Spans queued now. */
  readonly queued: number;
  /** Spans the session has so far that have ended. */
  readonly ended: number;
  /** Spans still open, for a later read. */
  readonly open: number;
}

export function queueSession(
  ledger: ExportLedger,
  target: OtelTarget,
  store: SessionEventStore,
  facts: SessionFacts,
  redact: Redactor,
  resource: Resource,
): QueuedSession {
  const trace = readSessionSpans(store, facts, { content: target.content });
  const known = ledger.queuedSpanIds(target.url.href, facts.id);
  const fresh = trace.spans.filter((s) => !known.has(s.spanId));
  if (fresh.length === 0) return { queued: 0, ended: trace.spans.length, open: trace.open };
  const { traceId, spans } = redactTrace({ ...trace, spans: fresh }, redact);
  const queued = ledger.enqueue(target.url.href, facts.id, spans, (part) => encodeSpans(traceId, part, resource));
  return { queued, ended: trace.spans.length, open: trace.open };
}
