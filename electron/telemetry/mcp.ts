import { arr, isObject, lenientJson, type Json } from './json.ts';
import { parseSse } from './sse.ts';

// MCP over HTTP (JSON-RPC 2.0; the response is JSON or, in the Streamable HTTP transport, an SSE
// stream of messages): each request method with the response that answers it. Pure.

export interface McpMessage {
  readonly method: string;
  readonly id?: string;
  /** The request's params and the answer's error object, as sent (the session events API shows them whole). */
  readonly params?: unknown;
  readonly rpcError?: Json;
  readonly toolName?: string;
  readonly arguments?: string;
  readonly result?: unknown;
  readonly resultText?: string;
  readonly error?: string;
  /** The server's own name, from an initialize result. */
  readonly serverName?: string;
  /** What the security ledger keeps of the exchange. */
  readonly facts: Record<string, unknown>;
}

const idOf = (v: unknown): string | undefined => (typeof v === 'string' || typeof v === 'number' ? String(v) : undefined);
const FACT_CAP = 4096;

function capped(value: unknown): unknown {
  const text = JSON.stringify(value ?? null);
  return text.length <= FACT_CAP ? value : `${text.slice(0, FACT_CAP)}…`;
}

function responses(contentType: string | undefined, body: Uint8Array): Json[] {
  const values = /text\/event-stream/i.test(contentType ?? '')
    ? parseSse(body).events.map((e) => lenientJson(e.data))
    : [lenientJson(Buffer.from(body).toString('utf8'))];
  return values.flatMap((v) => (Array.isArray(v) ? v : [v])).filter(isObject);
}

/** Text of a tools/call result: its text content blocks, else its JSON. */
function resultText(result: unknown): string | undefined {
  if (!isObject(result)) return result === undefined ? undefined : JSON.stringify(result);
  const blocks = arr(result.content).filter(isObject);
  const text = blocks
    .map((b) => (typeof b.text === 'string' ? b.text : ''))
    .filter(Boolean)
    .join('\n');
  return text || JSON.stringify(result);
}

export function parseMcpExchange(requestJson: unknown, responseContentType: string | undefined, responseBody: Uint8Array): McpMessage[] {
  const requests = (Array.isArray(requestJson) ? requestJson : [requestJson]).filter(
    (m): m is Json => isObject(m) && m.jsonrpc === '2.0' && typeof m.method === 'string',
  );
  if (requests.length === 0) return [];
  const answers = new Map<string, Json>();
  for (const r of responses(responseContentType, responseBody)) {
    const id = idOf(r.id);
    if (id !== undefined && (r.result !== undefined || r.error !== undefined)) answers.set(id, r);
  }
  return requests.map((req) => {
    const id = idOf(req.id);
    const params = isObject(req.params) ? req.params : {};
    const answer = id === undefined ? undefined : answers.get(id);
    const error = isObject(answer?.error) ? String(answer.error.message ?? 'error') : undefined;
    const result = answer?.result;
    const isToolError = isObject(result) && result.isError === true;
    const serverInfo = req.method === 'initialize' && isObject(result) && isObject(result.serverInfo) ? result.serverInfo : undefined;
    return {
      method: String(req.method),
      id,
      params: req.params,
      rpcError: isObject(answer?.error) ? answer.error : undefined,
      toolName: req.method === 'tools/call' && typeof params.name === 'string' ? params.name : undefined,
      arguments: req.method === 'tools/call' ? JSON.stringify(params.arguments ?? {}) : undefined,
      result,
      resultText: req.method === 'tools/call' ? resultText(result) : undefined,
      error: error ?? (isToolError ? (resultText(result) ?? 'tool error') : undefined),
      serverName: typeof serverInfo?.name === 'string' ? serverInfo.name : undefined,
      facts: {
        method: req.method,
        id: id ?? null,
        params: capped(params),
        ...(answer ? { result: capped(result), error: answer.error ?? null } : {}),
      },
    };
  });
}
