import { z } from 'zod';

// A Cortex client's view of the session events API: the Go types agentop's apiclient decodes into,
// field by field, as rossoctl/cortex da955ea1 has them (authbridge/cmd/abctl/apiclient/client.go
// and sse.go; authbridge/authlib/pipeline/session.go, extensions.go and context.go;
// authbridge/authlib/session/store.go's SessionSummary), with the fields the spec
// (../shared/spec/session-api.md) adds typed from the spec. Never written from our own types, so
// the wire cannot drift with them.
//
// Go's encoding/json ignores keys it does not know (our additions, such as kind and tool, ride
// along unchecked) but fails the whole document on a type mismatch: a fraction or a string where
// it has an int, a string or an array where it has a map or a struct, anything but an RFC 3339
// string where it has a time.Time. Each of those fails here too. Stricter than Go where the spec
// pins it: an enum value outside the spec's (Go maps an unknown phase or direction to its zero
// value), a null, and a field the spec says is always present.

const count = z.number().int().nonnegative();
const text = z.string();
/** Go's int and int64: a JSON number with no fraction. */
const goInt = z.number().int();
/** time.Time's UnmarshalJSON: RFC 3339 alone (upper-case T and Z, a zone, a four-digit year), and a date that exists. */
const time = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/, 'not an RFC 3339 time')
  .refine((s) => !Number.isNaN(Date.parse(s)), 'not an RFC 3339 time');
/**
 * A JSON object: what Go decodes into a map[string]any or a struct. Checked, not rebuilt: z.record
 * copies by assignment, which drops an own `__proto__` key that Go's map keeps.
 */
const object = z.custom<Record<string, unknown>>(
  (value) => typeof value === 'object' && value !== null && !Array.isArray(value),
  'expected a JSON object',
);

const toolCall = z.object({ id: text, name: text, arguments: text });

const inference = z.object({
  model: text.optional(),
  requestedModel: text.optional(),
  servedModel: text.optional(),
  messages: z
    .array(
      z.object({
        role: text,
        content: text,
        contentBytes: count,
        toolCallNames: text.optional(),
        toolUseIds: text.optional(),
        toolUseId: text.optional(),
      }),
    )
    .optional(),
  tools: z.array(z.object({ name: text, description: text.optional(), parameters: object.optional() })).optional(),
  toolChoice: z.unknown().optional(),
  toolCalls: z.array(toolCall).optional(),
  toolResults: z.array(object).optional(),
  historyToolCalls: z.array(toolCall).optional(),
  completion: text.optional(),
  finishReason: text.optional(),
  inputTokens: count.optional(),
  cacheReadTokens: count.optional(),
  cacheWriteTokens: count.optional(),
  outputTokens: count.optional(),
  reasoningTokens: count.optional(),
  presentKinds: z.number().int().min(0).max(31).optional(),
  promptTokens: count.optional(),
  completionTokens: count.optional(),
  totalTokens: count.optional(),
  temperature: z.number().optional(),
  maxTokens: goInt.optional(),
  topP: z.number().optional(),
  stream: z.boolean().optional(),
  streamedResponse: z.boolean().optional(),
  thinkingType: text.optional(),
  thinkingDisplay: text.optional(),
  effort: text.optional(),
  anthropicBeta: text.optional(),
  historyThinking: object.optional(),
  responseThinking: object.optional(),
  agentRole: text.optional(),
  isAction: z.boolean().optional(),
  messageCount: count.optional(),
  toolCount: count.optional(),
});

const mcp = z.object({
  method: text,
  rpcId: text.optional(),
  params: object.optional(),
  result: object.optional(),
  error: z.object({ code: goInt.optional(), message: text, data: z.unknown().optional() }).optional(),
  isAction: z.boolean().optional(),
});

const a2a = z.object({
  method: text.optional(),
  rpcId: text.optional(),
  sessionId: text.optional(),
  taskId: text.optional(),
  messageId: text.optional(),
  role: text.optional(),
  parts: z.array(z.object({ kind: text, content: text })).optional(),
  finalStatus: text.optional(),
  artifact: text.optional(),
  errorMessage: text.optional(),
  isAction: z.boolean().optional(),
});

export const ACTIONS = ['allow', 'deny', 'skip', 'modify', 'observe'] as const;
const invocation = z.object({
  plugin: text,
  action: z.enum(ACTIONS),
  phase: z.enum(['request', 'response']).optional(),
  reason: text.optional(),
  path: text.optional(),
  details: z.record(z.string(), text).optional(),
  shadow: z.boolean().optional(),
});

const headers = z.record(z.string(), z.union([text, z.array(text)]));
const raw = z.object({
  request: text.optional(),
  requestBase64: text.optional(),
  forwarded: text.optional(),
  forwardedBase64: text.optional(),
  requestHeaders: headers.optional(),
  query: text.optional(),
  response: z
    .object({
      status: z.number().int().optional(),
      headers: headers.optional(),
      body: text.optional(),
      bodyBase64: text.optional(),
      decoded: z.boolean().optional(),
      truncated: z.boolean().optional(),
      incomplete: z.boolean().optional(),
    })
    .optional(),
});

export const sessionEvent = z
  .looseObject({
    sessionId: text,
    seq: z.number().int().positive(),
    at: time,
    direction: z.enum(['inbound', 'outbound']).optional(),
    phase: z.enum(['request', 'response', 'denied']),
    requestId: text.optional(),
    host: text.optional(),
    requestedHost: text.optional(),
    statusCode: z.number().int().min(100).max(599).optional(),
    durationMs: count.optional(),
    ttfbMs: count.optional(),
    bytesUp: count.optional(),
    bytesDown: count.optional(),
    httpMethod: text.optional(),
    httpPath: text.optional(),
    tunnel: z.boolean().optional(),
    tunnelReason: text.optional(),
    dialAddr: text.optional(),
    identity: z
      .object({ subject: text.optional(), scopes: z.array(text).optional(), clientId: text.optional(), agentId: text.optional() })
      .optional(),
    tls: z.object({ version: text.optional(), cipherSuite: text.optional(), peerSpiffeId: text.optional() }).optional(),
    /** pipeline.EventClient (authlib/pipeline/client.go): a struct of three omitempty strings, so a bare string fails the page. */
    client: z.object({ name: text.optional(), version: text.optional(), raw: text.optional() }).optional(),
    /** EventError: code is a Go string (the spec's proxy_error 413 has "an empty error.code"). */
    error: z.object({ kind: text, message: text, code: text.optional() }).optional(),
    invocations: z.object({ inbound: z.array(invocation).optional(), outbound: z.array(invocation).optional() }).optional(),
    plugins: object.optional(),
    subagent: text.optional(),
    parentSubagent: text.optional(),
    inference: inference.optional(),
    mcp: mcp.optional(),
    a2a: a2a.optional(),
    raw: raw.optional(),
  })
  .refine((e) => [e.inference, e.mcp, e.a2a].filter((p) => p !== undefined).length <= 1, 'more than one of inference, mcp and a2a');

export type DecodedEvent = z.infer<typeof sessionEvent>;

export const eventsPage = z.object({
  id: text,
  events: z.array(sessionEvent),
  totalEvents: count.optional(),
  oldestSeq: count.optional(),
  view: z.literal('summary').optional(),
  schemaVersion: z.number().int().positive(),
});

export const eventDetail = sessionEvent.and(z.object({ schemaVersion: z.number().int().positive() }));

/** session.SessionSummary, with the fields the spec adds; the list is ListSessions' {sessions}. */
const sessionSummary = z.object({
  id: text,
  createdAt: time,
  updatedAt: time,
  eventCount: count,
  active: z.boolean(),
  totalTokens: count.optional(),
  title: text.optional(),
  agent: text.optional(),
  costMicros: count.optional(),
  avoidedMicros: count.optional(),
  promptContext: z.object({ tokens: count, stated: z.boolean(), at: time.optional(), msgs: count.optional() }).optional(),
  inferenceHost: text.optional(),
  inferenceHostFromHistory: z.boolean().optional(),
  procs: z.array(text).optional(),
  lastRequestAt: time.optional(),
  linkedTo: z.array(z.object({ session: text, first: time, last: time })).optional(),
  linkedAll: z.boolean().optional(),
  resident: z.literal(false).optional(),
});

export const sessionList = z.object({
  sessions: z.array(sessionSummary),
  archive: z
    .object({
      bytes: count,
      maxBytes: count,
      retentionDays: count,
      droppedEvents: count.optional(),
      writeErrors: count.optional(),
      droppedRenames: count.optional(),
      droppedCaptures: count.optional(),
      paused: z.boolean().optional(),
    })
    .optional(),
});

/** apiclient.PipelinePlugin. Cortex's server always sends name, direction, position (from 1) and readsBody. */
const pipelinePlugin = z.object({
  name: text,
  direction: z.enum(['inbound', 'outbound']),
  position: z.number().int().positive(),
  readsBody: z.boolean(),
  requires: z.array(text).optional(),
  requiresAny: z.array(text).optional(),
  description: text.optional(),
  config: z.unknown().optional(),
});

export const pipelineView = z.object({ inbound: z.array(pipelinePlugin), outbound: z.array(pipelinePlugin) });

interface PluginField {
  name: string;
  type: string;
  required?: boolean;
  description?: string;
  default?: string;
  enum?: string[];
  fields?: PluginField[];
}
/** apiclient.PluginFieldEntry: default is a Go string. */
const pluginField: z.ZodType<PluginField> = z.lazy(() =>
  z.object({
    name: text,
    type: text,
    required: z.boolean().optional(),
    description: text.optional(),
    default: text.optional(),
    enum: z.array(text).optional(),
    fields: z.array(pluginField).optional(),
  }),
);

export const pluginCatalog = z.object({
  plugins: z.array(
    z.object({
      name: text,
      direction: z.enum(['inbound', 'outbound']).optional(),
      readsBody: z.boolean().optional(),
      requires: z.array(text).optional(),
      requiresAny: z.array(text).optional(),
      description: text.optional(),
      fields: z.array(pluginField).optional(),
    }),
  ),
});

/** bufio.Scanner's buffer in sse.go: a line that fills it (with no room for its newline) ends the connection (ErrTooLong), and the client reconnects. */
export const SSE_MAX_LINE_BYTES = 4 * 1024 * 1024;

export interface SseRead {
  /** The data of each frame, as sse.go hands it to json.Unmarshal. */
  readonly data: string[];
  /** A line too long for the client's scanner: the stream breaks there. */
  readonly broken: boolean;
}

/**
 * sse.go's parseSSE: lines (a trailing CR dropped, as bufio.ScanLines does); a blank line ends a
 * frame; a line starting with ':' is a comment; data: lines (one leading space dropped) join with
 * newlines (a newline only after data already held); event:, id:, retry: and anything else are ignored, so the event name is never
 * checked. A frame with no data line yields nothing, and a stream that ends mid-frame still
 * yields its data.
 */
export function readSse(stream: string): SseRead {
  const data: string[] = [];
  // A strings.Builder in sse.go: a newline goes before a data line only when the buffer already holds something.
  let buffer = '';
  const flush = (): void => {
    if (buffer.length > 0) data.push(buffer);
    buffer = '';
  };
  const lines = stream.split('\n');
  if (lines.at(-1) === '') lines.pop();
  for (const raw of lines) {
    if (Buffer.byteLength(raw) >= SSE_MAX_LINE_BYTES) return { data, broken: true };
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line === '') flush();
    else if (line.startsWith('data:')) buffer += (buffer.length > 0 ? '\n' : '') + line.slice(5).replace(/^ /, '');
  }
  flush();
  return { data, broken: false };
}

/** Decodes as the client would, throwing with the path of the first field that does not fit. */
export function decode<T>(schema: z.ZodType<T>, json: unknown): T {
  const parsed = schema.safeParse(json);
  if (!parsed.success)
    throw new Error(`does not decode: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return parsed.data;
}
