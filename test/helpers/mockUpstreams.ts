import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { join } from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { gzipSync } from 'node:zlib';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { createSecureContext } from 'node:tls';
import { CertificateAuthority } from '../../electron/proxy/certificateAuthority.ts';
import type { CapsemHome } from '../../electron/store/paths.ts';

// Local HTTPS upstreams that speak each provider's real wire format, so the official SDKs can
// run against them through the proxy. Their certificates come from a test CA the proxy is told
// to trust (CAPSEM_UPSTREAM_CA_FILE), exactly as a corporate CA would be.

export interface Upstream {
  readonly port: number;
  readonly caPem: string;
  readonly requests: { path: string; body: unknown; headers: IncomingMessage['headers'] }[];
  close(): Promise<void>;
}

export type Handler = (req: IncomingMessage, body: unknown, res: ServerResponse, n: number) => void;

export interface UpstreamOptions {
  /** Answers a request that asks to switch protocols (a WebSocket), on its socket. */
  readonly onUpgrade?: (req: IncomingMessage, socket: Duplex, head: Buffer) => void;
}

export async function startUpstream(home: CapsemHome, hosts: string[], handler: Handler, options: UpstreamOptions = {}): Promise<Upstream> {
  const ca = await CertificateAuthority.load(home);
  const contexts = new Map<string, { cert: string; key: string }>();
  for (const host of hosts) {
    const leaf = await ca.issueLeaf(host);
    contexts.set(host, { cert: leaf.certPem + ca.certPem, key: leaf.keyPem });
  }
  const first = contexts.get(hosts[0]!)!;
  const requests: Upstream['requests'] = [];
  const server: Server = createServer(
    {
      cert: first.cert,
      key: first.key,
      SNICallback: (name, cb) => {
        const c = contexts.get(name) ?? first;
        cb(null, createSecureContext(c));
      },
    },
    (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // not JSON
        }
        requests.push({ path: req.url ?? '', body, headers: req.headers });
        handler(req, body, res, requests.length);
      });
    },
  );
  if (options.onUpgrade) server.on('upgrade', options.onUpgrade);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    caPem: ca.certPem,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * The environment that sends `hosts` (port 443) to `upstream` and trusts its CA, as CAPSEM_RESOLVE
 * and CAPSEM_UPSTREAM_CA_FILE do for a user's corporate setup; the CA is written into `dir`.
 */
export function upstreamEnv(upstream: Upstream, hosts: readonly string[], dir: string): NodeJS.ProcessEnv {
  const caFile = join(dir, 'upstream-ca.pem');
  writeFileSync(caFile, upstream.caPem);
  return { CAPSEM_RESOLVE: hosts.map((h) => `${h}:443=127.0.0.1:${upstream.port}`).join(','), CAPSEM_UPSTREAM_CA_FILE: caFile };
}

/**
 * Sends SSE events frame by frame. `cutAfter` breaks the connection after that many frames (a
 * stream cut short); `stallAfter` sends that many and then nothing, leaving the response open
 * (a model still working) until the client gives up on it.
 */
export function sse(
  res: ServerResponse,
  events: { event?: string; data: unknown }[],
  options: { gzip?: boolean; cutAfter?: number; stallAfter?: number } = {},
): void {
  const frames = events.map(
    (e) => `${e.event ? `event: ${e.event}\n` : ''}data: ${typeof e.data === 'string' ? e.data : JSON.stringify(e.data)}\n\n`,
  );
  const kept = frames.slice(0, options.cutAfter ?? options.stallAfter);
  const payload = Buffer.from(kept.join(''));
  res.writeHead(200, { 'content-type': 'text/event-stream', ...(options.gzip ? { 'content-encoding': 'gzip' } : {}) });
  if (options.gzip) return void res.end(gzipSync(payload));
  // Sent frame by frame, as a real stream is.
  let i = 0;
  const next = (): void => {
    if (i < kept.length) {
      res.write(kept[i++]);
      setImmediate(next);
    } else if (options.cutAfter !== undefined) res.destroy();
    else if (options.stallAfter === undefined) res.end();
  };
  next();
}

export function json(res: ServerResponse, status: number, body: unknown, options: { gzip?: boolean } = {}): void {
  const payload = Buffer.from(JSON.stringify(body));
  res.writeHead(status, { 'content-type': 'application/json', ...(options.gzip ? { 'content-encoding': 'gzip' } : {}) });
  res.end(options.gzip ? gzipSync(payload) : payload);
}

/** An Anthropic Messages stream: optional thinking, text, then tool_use blocks. */
export function anthropicStream(
  model: string,
  text: string,
  tools: { id: string; name: string; input: unknown }[],
  usage: { input: number; output: number; cacheRead?: number; cacheWrite?: number },
): { event: string; data: unknown }[] {
  const events: { event: string; data: unknown }[] = [
    {
      event: 'message_start',
      data: {
        type: 'message_start',
        message: {
          id: 'msg_test_1',
          type: 'message',
          role: 'assistant',
          model,
          content: [],
          stop_reason: null,
          usage: {
            input_tokens: usage.input,
            output_tokens: 1,
            cache_read_input_tokens: usage.cacheRead ?? 0,
            cache_creation_input_tokens: usage.cacheWrite ?? 0,
          },
        },
      },
    },
    { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '' } } },
    {
      event: 'content_block_delta',
      data: { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Let me check.' } },
    },
    { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
    { event: 'content_block_start', data: { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } } },
    ...text.match(/.{1,7}/g)!.map((piece) => ({
      event: 'content_block_delta',
      data: { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: piece } },
    })),
    { event: 'content_block_stop', data: { type: 'content_block_stop', index: 1 } },
  ];
  tools.forEach((tool, i) => {
    const json = JSON.stringify(tool.input);
    events.push(
      {
        event: 'content_block_start',
        data: { type: 'content_block_start', index: 2 + i, content_block: { type: 'tool_use', id: tool.id, name: tool.name, input: {} } },
      },
      {
        event: 'content_block_delta',
        data: { type: 'content_block_delta', index: 2 + i, delta: { type: 'input_json_delta', partial_json: json.slice(0, 5) } },
      },
      {
        event: 'content_block_delta',
        data: { type: 'content_block_delta', index: 2 + i, delta: { type: 'input_json_delta', partial_json: json.slice(5) } },
      },
      { event: 'content_block_stop', data: { type: 'content_block_stop', index: 2 + i } },
    );
  });
  events.push(
    {
      event: 'message_delta',
      data: {
        type: 'message_delta',
        delta: { stop_reason: tools.length ? 'tool_use' : 'end_turn', stop_sequence: null },
        usage: { output_tokens: usage.output },
      },
    },
    { event: 'message_stop', data: { type: 'message_stop' } },
  );
  return events;
}

/**
 * An OpenAI Chat Completions stream, ending in `[DONE]`. The usage chunk (`choices: []`) is sent
 * only when `usage` is given, as OpenAI sends it only to a request that set
 * `stream_options.include_usage`; then every other chunk carries `usage: null`, as OpenAI's do.
 */
export function openaiChatStream(model: string, text: string, usage?: { prompt: number; completion: number }): { data: unknown }[] {
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}): { data: unknown } => ({
    data: {
      id: 'chatcmpl-test-1',
      object: 'chat.completion.chunk',
      created: 1,
      model,
      choices,
      ...(usage ? { usage: null } : {}),
      ...extra,
    },
  });
  return [
    chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]),
    ...text.match(/.{1,7}/g)!.map((piece) => chunk([{ index: 0, delta: { content: piece }, finish_reason: null }])),
    chunk([{ index: 0, delta: {}, finish_reason: 'stop' }]),
    ...(usage
      ? [
          chunk([], {
            usage: { prompt_tokens: usage.prompt, completion_tokens: usage.completion, total_tokens: usage.prompt + usage.completion },
          }),
        ]
      : []),
    { data: '[DONE]' },
  ];
}

/** What the Anthropic upstreams read of a Messages request. */
export type AnthropicBody = {
  model?: string;
  stream?: boolean;
  tools?: { name: string }[];
  messages?: { role: string; content: unknown }[];
};

/** The request carries a tool's result back: the model asked for the tool on an earlier turn. */
export function hasToolResult(body: AnthropicBody): boolean {
  return (body.messages ?? []).some(
    (m) => Array.isArray(m.content) && (m.content as { type?: string }[]).some((block) => block.type === 'tool_result'),
  );
}

/** An Anthropic Messages answer, streamed when the request asked for a stream, as the API does. */
export function anthropicAnswer(
  res: ServerResponse,
  body: AnthropicBody,
  text: string,
  tools: { id: string; name: string; input: unknown }[],
  usage: { input: number; output: number },
): void {
  const model = body.model ?? 'claude-sonnet-4-6';
  if (body.stream) return sse(res, anthropicStream(model, text, tools, usage));
  json(res, 200, {
    id: 'msg_capsem_plain',
    type: 'message',
    role: 'assistant',
    model,
    content: [{ type: 'text', text }, ...tools.map((t) => ({ type: 'tool_use', ...t }))],
    stop_reason: tools.length ? 'tool_use' : 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: usage.input, output_tokens: usage.output, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
  });
}
