// The wire form of one session event, as the session events API, the SSE tail and the app show
// it. Field names follow ../shared/spec/session-api.md; `kind`, `tool`, `file`, `dns`, `process`,
// `decision` and `matchedRule` are additions (clients ignore keys they do not know). Absent
// means unknown: nothing is sent as zero in its place.

export const SCHEMA_VERSION = 1;

export interface InferenceMessage {
  role: string;
  /** The text blocks only, joined by newlines. */
  content: string;
  /** Wire size of the message's content value as the client sent it (JSON bytes). */
  contentBytes: number;
  toolCallNames?: string;
  toolUseIds?: string;
  toolUseId?: string;
}

export interface DeclaredTool {
  name: string;
  description?: string;
  parameters?: unknown;
}

export interface ToolCallView {
  id: string;
  name: string;
  arguments: string;
}

export interface ToolResultView {
  toolUseId: string;
  content: string;
  isError?: boolean;
}

export type EventKind = 'http' | 'model' | 'tool_call' | 'tool_result' | 'file' | 'dns';

export interface Inference {
  provider: string;
  model?: string;
  messages?: InferenceMessage[];
  tools?: DeclaredTool[];
  toolChoice?: unknown;
  historyToolCalls?: ToolCallView[];
  toolResults?: ToolResultView[];
  toolCalls?: ToolCallView[];
  temperature?: number;
  maxTokens?: number;
  topP?: number;
  stream?: true;
  streamedResponse?: boolean;
  completion?: string;
  thinking?: string;
  finishReason?: string;
  messageId?: string;
  inputTokens?: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
  outputTokens?: number;
  reasoningTokens?: number;
  presentKinds?: number;
  promptTokens?: number;
  completionTokens?: number;
  totalTokens?: number;
  costUsd?: number;
  messageCount?: number;
  toolCount?: number;
  isAction: true;
}

/** A JSON object; the spec types these fields as objects, so a client may decode them as maps. */
export type JsonObject = Record<string, unknown>;

/** On a request event: method, rpcId, params. On its response: method, rpcId, result or error. */
export interface Mcp {
  method: string;
  rpcId?: string;
  params?: JsonObject;
  result?: JsonObject;
  error?: { code?: number; message: string; data?: unknown };
  isAction?: true;
}

export type InvocationAction = 'allow' | 'deny' | 'skip' | 'modify' | 'observe';

/**
 * One step of the recording pipeline on an exchange, named as /v1/pipeline names it: the policy,
 * the credential broker, the step that records the exchange.
 */
export interface Invocation {
  plugin: 'policy' | 'credential' | 'exchange';
  action: InvocationAction;
  reason?: string;
}

export interface ToolActivity {
  callId: string;
  name?: string;
  origin?: string;
  status?: string;
  arguments?: string;
  resultPreview?: string;
  isError?: boolean;
  /** The seq of the model call's response that emitted the call, or of its request that carried the result back. */
  modelCallSeq?: number;
}

export interface FileChange {
  action: string;
  path: string;
  size?: number;
}

/** A name the guest looked up: the stand-in addresses it was given, and where the name really goes. */
export interface DnsLookup {
  name: string;
  type: string;
  rcode: string;
  answers: string[];
  resolved: string[];
}

export interface RawCapture {
  request?: string;
  requestBase64?: string;
  requestHeaders?: unknown;
  query?: string;
  response?: {
    status?: number;
    headers?: unknown;
    body?: string;
    bodyBase64?: string;
    truncated: boolean;
  };
}

/**
 * Cortex's pipeline.EventClient. name and version are set for an agent we know (claude-code,
 * codex, gemini-cli); raw is the User-Agent as sent, control characters replaced, capped at 128 bytes.
 */
export interface EventClient {
  name?: string;
  version?: string;
  raw?: string;
}

export interface SessionEvent {
  sessionId: string;
  seq: number;
  at: string;
  kind: EventKind;
  /** Absent on local events (file changes), which have no network direction. */
  direction?: 'outbound';
  phase: 'request' | 'response' | 'denied';
  /** The exchange an event belongs to: a request and its response (or denial) share it. */
  requestId?: string;
  eventId: string;
  traceId?: string;
  turnId?: string;
  host?: string;
  statusCode?: number;
  durationMs?: number;
  ttfbMs?: number;
  bytesUp?: number;
  bytesDown?: number;
  httpMethod?: string;
  httpPath?: string;
  process?: { name?: string; pid?: number };
  /** The program that sent the request, from its User-Agent; absent when it sent none. */
  client?: EventClient;
  /** The Claude Code subagent or teammate that sent the request (X-Claude-Code-Agent-Id); absent on the main conversation's and every other client's. */
  subagent?: string;
  /** The agent that started `subagent` (X-Claude-Code-Parent-Agent-Id); absent when the conversation itself did. */
  parentSubagent?: string;
  invocations?: { outbound: Invocation[] };
  decision?: string;
  matchedRule?: string;
  inference?: Inference;
  mcp?: Mcp;
  tool?: ToolActivity;
  file?: FileChange;
  dns?: DnsLookup;
  /** code: the status the upstream sent, where it answered, as a string (Cortex's EventError.Code is one). */
  error?: { kind: string; message: string; code?: string };
  raw?: RawCapture;
}
