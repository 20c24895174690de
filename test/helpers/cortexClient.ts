import { z } from 'zod';

// A Cortex client's view of the session events API, written from ../shared/spec/session-api.md
// alone (never from our own types), so the wire cannot drift with them. Strict where a client is
// strict: an enum value it does not know, a field of the wrong JSON type, or a field the spec types
// as an object sent as anything else fails to decode. Keys it does not know are ignored, as the
// spec asks of clients (our additions, such as kind and tool, ride along unchecked).

const count = z.number().int().nonnegative();
const text = z.string();
const time = z.string().refine((s) => !Number.isNaN(Date.parse(s)), 'not an RFC 3339 time');
/** A JSON object: what a Go client decodes into a map or struct. */
const object = z.record(z.string(), z.unknown());

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
  maxTokens: count.optional(),
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
  error: z.object({ code: z.number().int().optional(), message: text, data: z.unknown().optional() }).optional(),
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
const invocation = z.object({ plugin: text, action: z.enum(ACTIONS), reason: text.optional() });

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
    durationMs: z.number().nonnegative().optional(),
    ttfbMs: z.number().nonnegative().optional(),
    bytesUp: count.optional(),
    bytesDown: count.optional(),
    httpMethod: text.optional(),
    httpPath: text.optional(),
    tunnel: z.boolean().optional(),
    tunnelReason: text.optional(),
    dialAddr: text.optional(),
    identity: object.optional(),
    client: text.optional(),
    error: z.object({ kind: text, message: text, code: z.number().int().optional() }).optional(),
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

/** Decodes as the client would, throwing with the path of the first field that does not fit. */
export function decode<T>(schema: z.ZodType<T>, json: unknown): T {
  const parsed = schema.safeParse(json);
  if (!parsed.success)
    throw new Error(`does not decode: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return parsed.data;
}
