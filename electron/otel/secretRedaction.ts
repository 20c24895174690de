import type { Attributes, SessionTrace, SpanRecord } from './spanRecord.ts';

// Nothing secret leaves in an exported span. Keys are kept on the host and the recorder never
// writes one, but a stand-in (the guest's copy, random per session and not kept after it) can
// reach a recorded command line, tool argument or error message, and a real key can if a user
// pasted it. Every string of every span passes here: the real keys the host holds are replaced
// wherever they appear (as they are and URL-encoded), and so is every token shaped like a key, which
// catches stand-ins too: a run of 24 or more key characters that mixes upper case, lower case and
// digits. Hex digests and ids (lower case) are kept.

export const REDACTED = '[redacted]';

const TOKEN = /[A-Za-z0-9_\-+/]{24,}={0,2}/g;
const looksLikeKey = (token: string): boolean => /[A-Z]/.test(token) && /[a-z]/.test(token) && /[0-9]/.test(token);

export type Redactor = (text: string) => string;

export function secretRedactor(keys: readonly string[]): Redactor {
  const literals = [...new Set(keys.filter((k) => k.length >= 8).flatMap((k) => [k, encodeURIComponent(k)]))].sort(
    (a, b) => b.length - a.length,
  );
  return (text) => {
    let out = text;
    for (const literal of literals) if (out.includes(literal)) out = out.split(literal).join(REDACTED);
    return out.replace(TOKEN, (token) => (looksLikeKey(token) ? REDACTED : token));
  };
}

function redactAttributes(attributes: Attributes, redact: Redactor): Attributes {
  const out: Attributes = {};
  for (const [k, v] of Object.entries(attributes))
    out[k] = typeof v === 'string' ? redact(v) : Array.isArray(v) ? v.map(redact) : (v as number | boolean);
  return out;
}

function redactSpan(span: SpanRecord, redact: Redactor): SpanRecord {
  return {
    ...span,
    name: redact(span.name),
    attributes: redactAttributes(span.attributes, redact),
    events: span.events.map((e) => ({ ...e, attributes: redactAttributes(e.attributes, redact) })),
    error: span.error === null ? null : redact(span.error),
  };
}

export function redactTrace(trace: SessionTrace, redact: Redactor): SessionTrace {
  return { ...trace, spans: trace.spans.map((s) => redactSpan(s, redact)) };
}
