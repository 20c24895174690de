import { CLAUDE_CODE_USER_AGENT, type ClaudeCodeCall } from '../../electron/dev/claudeCodeWire.ts';
import { modelAnswerWire, type SeedAnswer, type SeedToolCall } from '../../electron/dev/modelWire.ts';
import { EMPTY_BODY, type CapturedBody, type Exchange } from '../../electron/proxy/exchange.ts';

// Exchanges as the proxy hands them to the recorder once they have ended, for the tests that make
// a session by recording it (sessionFixture's liveSession has the recorder), never by writing the
// rows a recording would make: what those tests read is then what a recorded session holds.

/** A body as it crossed the wire, whole; a Buffer of its own each time (a body kept is handed over to the writer thread). */
export function capturedBody(content: string | Buffer): CapturedBody {
  const bytes = Buffer.from(content);
  return { bytes, total: bytes.length, truncated: false };
}

/** An HTTPS GET by the agent, allowed and answered 200 with nothing; `fields` say what differs. */
export function httpsExchange(host: string, path: string, fields: Partial<Exchange> = {}): Exchange {
  return {
    startedAt: new Date(),
    host,
    port: 443,
    scheme: 'https',
    kind: 'request',
    method: 'GET',
    path,
    query: null,
    requestHeaders: { host },
    responseHeaders: { 'content-type': 'application/json' },
    status: 200,
    requestBody: EMPTY_BODY,
    responseBody: EMPTY_BODY,
    durationMs: 1,
    ttfbMs: 1,
    decision: 'allowed',
    matchedRule: 'default.allow',
    processName: 'agent',
    pid: 1,
    error: null,
    eventId: null,
    parseError: null,
    ...fields,
  };
}

/** How a request the network policy refused ends: the proxy answers 403 itself, naming the rule. */
export const deniedBy = (rule: string): Partial<Exchange> => ({
  decision: 'denied',
  status: 403,
  matchedRule: rule,
  responseHeaders: null,
  error: { kind: 'destination_denied', message: `blocked by ${rule}` },
});

/** A coding agent that is not Claude Code and speaks to every provider: the client of a model call no test says more of. */
export const AGENT_USER_AGENT = 'opencode/1.0.150';

/**
 * A model API call as the proxy hands it to the recorder once it has ended: a JSON POST by a coding
 * agent (OpenCode's User-Agent), allowed, answered 200 with `response`.
 */
export function modelExchange(host: string, path: string, request: Buffer, response: Buffer, fields: Partial<Exchange> = {}): Exchange {
  return httpsExchange(host, path, {
    method: 'POST',
    requestHeaders: { host, 'content-type': 'application/json', 'user-agent': AGENT_USER_AGENT },
    requestBody: capturedBody(request),
    responseBody: capturedBody(response),
    ...fields,
  });
}

/** One turn of a Messages API call: what was asked, and what the model answered. */
export interface AnthropicTurn {
  readonly model?: string;
  readonly prompt?: string;
  readonly text?: string;
  /** The tools the model asks for. */
  readonly tools?: readonly SeedToolCall[];
  readonly usage?: Partial<SeedAnswer['usage']>;
}

let messages = 0;

/**
 * A Messages API call as Claude Code makes it: `prompt` posted to api.anthropic.com (or `fields.host`)
 * with its User-Agent and the tools it declares, the answer streamed back as Anthropic's events
 * (electron/dev/modelWire.ts, as `capsem dev seed` records them).
 */
export function anthropicExchange(turn: AnthropicTurn = {}, fields: Partial<Exchange> = {}): Exchange {
  const model = turn.model ?? 'claude-sonnet-4-20250514';
  const tools = turn.tools ?? [];
  const answer = modelAnswerWire('anthropic', {
    model,
    messageId: `msg_${++messages}`,
    text: turn.text ?? 'Done.',
    thinking: null,
    tools,
    stop: tools.length > 0 ? 'tool_use' : 'end_turn',
    usage: { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, ...turn.usage },
  });
  const request = {
    model,
    max_tokens: 1024,
    stream: true,
    tools: [{ name: 'Bash', description: 'Run a shell command', input_schema: { type: 'object' } }],
    messages: [{ role: 'user', content: turn.prompt ?? 'Fix the failing test' }],
  };
  const host = fields.host ?? 'api.anthropic.com';
  return modelExchange(host, '/v1/messages', Buffer.from(JSON.stringify(request)), Buffer.from(answer.body), {
    requestHeaders: { host, 'content-type': 'application/json', 'user-agent': CLAUDE_CODE_USER_AGENT },
    responseHeaders: { 'content-type': answer.contentType },
    ...fields,
  });
}

/** A Claude Code model call (electron/dev/claudeCodeWire.ts) as the proxy hands it to the recorder, started at `at`. */
export function claudeCodeExchange(call: ClaudeCodeCall, at: Date, fields: Partial<Exchange> = {}): Exchange {
  return httpsExchange(call.host, call.path, {
    startedAt: at,
    method: call.method,
    requestHeaders: call.requestHeaders,
    responseHeaders: call.responseHeaders,
    requestBody: capturedBody(call.request),
    responseBody: capturedBody(call.response),
    durationMs: 1000,
    ttfbMs: 300,
    ...fields,
  });
}
