import { lenientJson } from '../telemetry/json.ts';

// Why an answered model call has no token counts, told from the evidence recorded with it, so
// each finding names the cause that fits its rows: a stream that ended before its last event with
// no error on its exchange, or a body that could not be decoded and was read still encoded. Two lost
// nothing at all and are left to notes: a stream whose provider sends usage only on request
// (OpenAI Chat Completions without stream_options.include_usage), and a response cut short with
// its cause recorded (cutShortCalls.ts).

export interface NullTokenCall {
  readonly id: number;
  readonly model: string | null;
  readonly stream: boolean;
  /** model_calls.usage_details as stored; any text at all in a file another tool wrote. */
  readonly usageDetails: unknown;
  /** Whether the file links the call to its exchange (model_calls.net_event_id to net_events). */
  readonly linked: boolean;
  readonly errorKind: string | null;
  readonly errorMessage: string | null;
}

export interface NullTokenFinding {
  readonly message: string;
  readonly cause: string;
  readonly count: number;
  readonly samples: readonly string[];
}

type Reason = 'cutShort' | 'undecoded' | 'unexplained';

const SAMPLES = 5;

function usageMarks(details: unknown): { unreported: boolean; incomplete: boolean } {
  const usage = lenientJson(typeof details === 'string' ? details : undefined);
  if (typeof usage !== 'object' || usage === null || Array.isArray(usage)) return { unreported: false, incomplete: false };
  const marks = usage as Record<string, unknown>;
  return { unreported: marks.usage === 'unreported', incomplete: marks.incomplete === true };
}

function reasonOf(call: NullTokenCall): Reason | 'noted' {
  if (usageMarks(call.usageDetails).incomplete) return call.errorKind === null ? 'cutShort' : 'noted';
  if (call.errorKind === 'decode_error') return 'undecoded';
  return 'unexplained';
}

function causeOf(reason: Reason, stream: boolean, calls: readonly NullTokenCall[]): { message: string; cause: string } {
  const what = stream ? 'streamed model_calls with NULL tokens' : 'non-streamed model_calls with NULL tokens';
  if (reason === 'cutShort') {
    const why =
      "with no error on its exchange: the upstream ended it early, or it passed the recorder's body cap (event_body_blobs.truncated) and the rest was not kept";
    return stream
      ? {
          message: `${what}: the stream ended before its final event`,
          cause: `The stream ended before its final event ${why}; the provider's usage comes in that last event.`,
        }
      : {
          message: `${what}: the response was cut short`,
          cause: `The response JSON was cut short ${why}; the usage is at its end.`,
        };
  }
  if (reason === 'undecoded') {
    const detail = calls.find((c) => c.errorMessage)?.errorMessage;
    return {
      message: `${what}: the response could not be decoded`,
      cause: `Gzip bug: the response's Content-Encoding could not be undone (decode_error${detail ? `: ${detail}` : ''}), so the parser read still-encoded bytes and found no usage; check Accept-Encoding and Content-Encoding in the headers; the bytes as received are in event_body_blobs.`,
    };
  }
  if (!stream)
    return {
      message: what,
      cause:
        'Non-streaming: for non-streaming responses tokens come from the response JSON, not SSE; check the response body in event_body_blobs.',
    };
  return calls.every((c) => c.linked)
    ? {
        message: what,
        cause:
          "The stream ended normally and its body was decoded, yet no usage could be read from it: the provider's usage event may have a shape the parser does not read; compare the response body in event_body_blobs with the provider's stream format.",
      }
    : {
        message: what,
        cause:
          "No usage could be read from the stream, and this file does not link model calls to their exchanges, so what happened cannot be told from it: check the exchange's Content-Encoding (a compressed body parsed without decoding yields no events), whether it ended early, and its response body.",
      };
}

/** The findings for answered model calls with NULL tokens, one per cause, and a note for the calls whose provider reported none by design. */
export function nullTokenFindings(calls: Iterable<NullTokenCall>): { findings: NullTokenFinding[]; notes: string[] } {
  const groups = new Map<string, { reason: Reason; stream: boolean; calls: NullTokenCall[]; count: number }>();
  let unreported = 0;
  for (const call of calls) {
    if (usageMarks(call.usageDetails).unreported) {
      unreported += 1;
      continue;
    }
    const reason = reasonOf(call);
    if (reason === 'noted') continue;
    const key = `${reason}/${call.stream}`;
    const group = groups.get(key) ?? { reason, stream: call.stream, calls: [], count: 0 };
    groups.set(key, group);
    group.count += 1;
    if (group.calls.length < SAMPLES) group.calls.push(call);
  }
  const findings = [...groups.values()].map((g) => ({
    ...causeOf(g.reason, g.stream, g.calls),
    count: g.count,
    samples: g.calls.map((c) => `${c.id} ${c.model ?? '?'}`),
  }));
  const notes =
    unreported === 0
      ? []
      : [
          `${unreported} streamed model ${unreported === 1 ? 'call has' : 'calls have'} no token counts because the provider reported none (an OpenAI Chat Completions stream reports usage only when the request sets stream_options.include_usage): nothing was lost, the tokens are unknown`,
        ];
  return { findings, notes };
}
