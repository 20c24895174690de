import { createHash } from 'node:crypto';

// A span as Capsem derives it from a recorded session, before any OpenTelemetry type: plain data
// that can be compared, redacted and counted. Its ids are derived from the session id and what the
// span stands for, so a span read again (a live export after a restart, `capsem otel export` of a
// session already sent live) has the id it had, and the export ledger knows it was sent.

export type AttributeValue = string | number | boolean | string[];
export type Attributes = Record<string, AttributeValue>;

export interface SpanEventRecord {
  readonly name: string;
  /** Milliseconds since the epoch. */
  readonly at: number;
  readonly attributes: Attributes;
}

export interface SpanRecord {
  /** 16 hex digits. */
  readonly spanId: string;
  /** The parent's span id; null for the session's root span. */
  readonly parentId: string | null;
  readonly name: string;
  readonly kind: 'internal' | 'client';
  /** Milliseconds since the epoch. */
  readonly start: number;
  readonly end: number;
  readonly attributes: Attributes;
  readonly events: readonly SpanEventRecord[];
  /** The status message of a span that failed; null when it did not. */
  readonly error: string | null;
}

export interface SessionTrace {
  /** 32 hex digits, the same for every export of the session. */
  readonly traceId: string;
  /** Spans that have ended; a running session's open spans are left for a later read. */
  readonly spans: SpanRecord[];
  /** Spans not yet ended, so not in `spans`. */
  readonly open: number;
}

const digest = (text: string): string => createHash('sha256').update(text).digest('hex');

export const traceIdOf = (sessionId: string): string => digest(`capsem-trace\u0000${sessionId}`).slice(0, 32);

/** The span id of what `key` names in the session ('session', 'turn/17', 'tool/toolu_…'). */
export const spanIdOf = (sessionId: string, key: string): string => digest(`capsem-span\u0000${sessionId}\u0000${key}`).slice(0, 16);
