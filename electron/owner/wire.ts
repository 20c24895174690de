import { z } from 'zod';

// The control socket speaks newline-delimited JSON. Both directions are validated with these
// schemas; a message that fails them is answered with an error and otherwise ignored.

export type JsonValue = z.infer<ReturnType<typeof z.json>>;

/** Longest line either side accepts; a peer that sends more is dropped. Stream data is chunked below it. */
export const MAX_LINE_BYTES = 1024 * 1024;
/** Deepest nesting of arrays and objects either side accepts in a line (messages nest a few levels); deeper is refused unparsed. */
export const MAX_DEPTH = 64;
/** Raw bytes per data message: base64 grows them by a third, well under MAX_LINE_BYTES. */
export const MAX_DATA_CHUNK = 256 * 1024;

const RequestId = z.union([z.string().min(1).max(128), z.number().int()]);
const StreamId = z.string().min(1).max(128);

const RequestSchema = z.strictObject({ id: RequestId, method: z.string().min(1).max(200), params: z.json().optional() });
const StreamDataSchema = z.strictObject({ stream: StreamId, data: z.base64() });
const StreamEventSchema = z.strictObject({ stream: StreamId, event: z.json() });
/** The owner's end carries the command's exit code when there is one; a client's end closes its input. */
const StreamEndSchema = z.strictObject({ stream: StreamId, end: z.literal(true), exitCode: z.number().int().optional() });
const StreamMessageSchema = z.union([StreamDataSchema, StreamEventSchema, StreamEndSchema]);

export const ClientMessageSchema = z.union([RequestSchema, StreamMessageSchema]);

const ErrorBodySchema = z.strictObject({ code: z.string().min(1).max(100), message: z.string() });
export type ErrorBody = z.infer<typeof ErrorBodySchema>;

export const ServerMessageSchema = z.union([
  z.strictObject({ id: RequestId, result: z.json() }),
  /** id is null when the error answers a line that had no usable id (bad JSON, unknown stream). */
  z.strictObject({ id: RequestId.nullable(), error: ErrorBodySchema }),
  StreamMessageSchema,
]);
export type ServerMessage = z.infer<typeof ServerMessageSchema>;
export type StreamMessage = z.infer<typeof StreamMessageSchema>;

/** What `owner.info` answers: who owns this CAPSEM_HOME. */
export const OwnerInfoSchema = z.strictObject({
  pid: z.number().int().positive(),
  kind: z.enum(['app', 'cli']),
  command: z.string(),
  startedAt: z.string(),
  version: z.string(),
});
export type OwnerInfo = z.infer<typeof OwnerInfoSchema>;

/** Error codes the socket itself uses; method handlers may add their own. */
export const ErrorCode = {
  badMessage: 'bad_message',
  unknownMethod: 'unknown_method',
  invalidParams: 'invalid_params',
  failed: 'failed',
  lineTooLong: 'line_too_long',
  unknownStream: 'unknown_stream',
} as const;

/** Splits bytes into base64 data messages small enough for the line cap. */
export function dataMessages(stream: string, bytes: Uint8Array | string): StreamMessage[] {
  const buf = typeof bytes === 'string' ? Buffer.from(bytes) : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: StreamMessage[] = [];
  for (let at = 0; at < buf.length; at += MAX_DATA_CHUNK)
    out.push({ stream, data: buf.subarray(at, at + MAX_DATA_CHUNK).toString('base64') });
  return out;
}
