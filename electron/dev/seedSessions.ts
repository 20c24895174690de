import { createHash } from 'node:crypto';
import { openMainDb } from '../store/mainDb.ts';
import { endFailedStart } from '../store/failedStart.ts';
import { ensurePrivateDir, sessionPaths, type CapsemHome } from '../store/paths.ts';
import { registerSession, type SessionRecord } from '../store/registry.ts';
import { rollUpSession } from '../store/rollup.ts';
import { SessionWriter } from '../store/sessionWriter.ts';
import { detectModelApi, requestView } from '../telemetry/providers/index.ts';
import { promptOf } from '../telemetry/requestView.ts';

// Realistic sessions for tests, benchmarks and demos: agent turns that call a model, run tools
// and send the results back, MCP calls, ordinary HTTPS, a denied request, file edits and full
// bodies. Deterministic for a given seed, so a test can assert on what it generated.

export interface SeedOptions {
  readonly sessions: number;
  /** Approximate number of ledger events per session. */
  readonly events: number;
  readonly seed?: number;
  /** Names given in order; later sessions get no name. */
  readonly names?: readonly string[];
  /** Index of the session that ends as crashed; -1 for none. Defaults to the last of several. */
  readonly crashedIndex?: number;
  /** Size of each request/response body kept in event_body_blobs, in bytes. */
  readonly bodyBytes?: number;
  readonly onProgress?: (done: number, total: number) => void;
}

const PROVIDERS = [
  {
    provider: 'anthropic',
    host: 'api.anthropic.com',
    path: '/v1/messages',
    model: 'claude-sonnet-4-20250514',
    stopTool: 'tool_use',
    stopEnd: 'end_turn',
    inPerM: 3,
    outPerM: 15,
  },
  {
    provider: 'openai',
    host: 'api.openai.com',
    path: '/v1/chat/completions',
    model: 'gpt-4o',
    stopTool: 'tool_calls',
    stopEnd: 'stop',
    inPerM: 2.5,
    outPerM: 10,
  },
  {
    provider: 'google',
    host: 'generativelanguage.googleapis.com',
    path: '/v1beta/models/gemini-2.5-pro:streamGenerateContent',
    model: 'gemini-2.5-pro',
    stopTool: 'STOP',
    stopEnd: 'STOP',
    inPerM: 1.25,
    outPerM: 10,
  },
  { provider: 'ollama', host: 'localhost', path: '/api/chat', model: 'qwen3:8b', stopTool: 'stop', stopEnd: 'stop', inPerM: 0, outPerM: 0 },
] as const;

const TOOLS = [
  {
    name: 'Bash',
    args: (r: Rng) => ({ command: r.pick(['npm test', 'git status', 'ls -la src', 'rg "TODO" -n', 'python3 -m pytest -q']) }),
  },
  { name: 'Read', args: (r: Rng) => ({ file_path: `/root/src/${r.pick(['main.ts', 'server.py', 'README.md', 'lib/util.rs'])}` }) },
  {
    name: 'Edit',
    args: (r: Rng) => ({ file_path: `/root/src/${r.pick(['main.ts', 'server.py', 'app.tsx'])}`, old_string: 'foo', new_string: 'bar' }),
  },
  { name: 'Grep', args: (r: Rng) => ({ pattern: r.pick(['retry budget', 'TODO', 'fn main']), path: '/root' }) },
] as const;

const OTHER_HOSTS = ['github.com', 'registry.npmjs.org', 'pypi.org', 'objects.githubusercontent.com'];
const DEFAULT_NAMES = ['co-work1', 'code-vm1', 'code-vm2'];

/** A small deterministic PRNG (mulberry32): the same seed gives the same sessions. */
export class Rng {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }
  hex(length: number): string {
    let out = '';
    while (out.length < length)
      out += Math.floor(this.next() * 0x100000000)
        .toString(16)
        .padStart(8, '0');
    return out.slice(0, length);
  }
}

const WORDS =
  'the agent reads the failing test then edits the retry budget so the request loop stops after three attempts and logs why'.split(' ');

/** Words from a small agent-flavoured vocabulary, cut to `bytes`: realistic, compressible body text. */
export function prose(rng: Rng, bytes: number): string {
  const parts: string[] = [];
  let size = 0;
  while (size < bytes) {
    const word = rng.pick(WORDS);
    parts.push(word);
    size += word.length + 1;
  }
  return parts.join(' ').slice(0, bytes);
}

function sha256(data: Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

const DECLARED_TOOLS = TOOLS.map((t) => ({
  name: t.name,
  description: `The ${t.name} tool`,
  schema: { type: 'object', properties: { command: { type: 'string' } } },
}));

/** A request body in the provider's own wire shape, carrying the previous round's tool results. */
function requestBody(provider: string, model: string, prompt: string, results: readonly { callId: string; content: string }[]): unknown {
  switch (provider) {
    case 'anthropic':
      return {
        model,
        max_tokens: 8192,
        stream: true,
        system: 'You are a coding agent.',
        tools: DECLARED_TOOLS.map((t) => ({ name: t.name, description: t.description, input_schema: t.schema })),
        messages: [
          { role: 'user', content: prompt },
          ...(results.length
            ? [{ role: 'user', content: results.map((r) => ({ type: 'tool_result', tool_use_id: r.callId, content: r.content })) }]
            : []),
        ],
      };
    case 'google':
      return {
        systemInstruction: { parts: [{ text: 'You are a coding agent.' }] },
        tools: [{ functionDeclarations: DECLARED_TOOLS.map((t) => ({ name: t.name, description: t.description, parameters: t.schema })) }],
        contents: [
          { role: 'user', parts: [{ text: prompt }] },
          ...results.map((r) => ({
            role: 'user',
            parts: [{ functionResponse: { id: r.callId, name: 'Bash', response: { output: r.content } } }],
          })),
        ],
      };
    default:
      return {
        model,
        stream: true,
        tools: DECLARED_TOOLS.map((t) => ({
          type: 'function',
          function: { name: t.name, description: t.description, parameters: t.schema },
        })),
        messages: [
          { role: 'system', content: 'You are a coding agent.' },
          { role: 'user', content: prompt },
          ...results.map((r) => ({ role: 'tool', tool_call_id: r.callId, content: r.content })),
        ],
      };
  }
}

const SEED_USER_AGENT = 'claude-cli/2.0.14 (external, cli)';

class SessionScript {
  private clock: number;
  private turnsLeftInTrace = 0;
  private traceId = '';

  constructor(
    private readonly writer: SessionWriter,
    private readonly rng: Rng,
    start: number,
    private readonly bodyBytes: number,
  ) {
    this.clock = start;
  }

  private at(stepMs: number): string {
    this.clock += stepMs;
    return new Date(this.clock).toISOString();
  }

  private body(eventId: string, sourceTable: string, direction: 'request' | 'response', text: string): void {
    const bytes = Buffer.from(text);
    this.writer.append('event_body_blobs', {
      event_id: eventId,
      source_table: sourceTable,
      direction,
      content_type: 'application/json',
      original_bytes: bytes.byteLength,
      stored_bytes: bytes.byteLength,
      truncated: 0,
      body_hash: sha256(bytes),
      body: bytes,
      created_at: new Date(this.clock).toISOString(),
    });
  }

  private mcpCalls = 0;

  /**
   * The agent calling the MCP tool the model asked for, as the recorder writes it: the exchange
   * with its JSON-RPC bodies, then the call under origin mcp. Every third server answers with a
   * bare string result, as some do. Takes nothing from the rng, so the rest of the script is unchanged.
   */
  private mcpExchange(trace: { trace_id: string; turn_id: string }, args: string): void {
    const id = ++this.mcpCalls;
    const at = new Date(this.clock).toISOString();
    const request = JSON.stringify({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: 'snapshots_create', arguments: JSON.parse(args) as unknown },
    });
    const response = JSON.stringify({ jsonrpc: '2.0', id, result: id % 3 === 0 ? 'ok' : { content: [{ type: 'text', text: 'ok' }] } });
    const net = this.writer.append('net_events', {
      timestamp: at,
      domain: 'mcp.capsem.dev',
      port: 443,
      decision: 'allowed',
      process_name: 'claude',
      pid: 412,
      method: 'POST',
      path: '/mcp',
      status_code: 200,
      bytes_sent: request.length,
      bytes_received: response.length,
      duration_ms: 40,
      ttfb_ms: 20,
      matched_rule: 'default.allow-public',
      request_headers: JSON.stringify({ 'content-type': 'application/json', 'user-agent': SEED_USER_AGENT }),
      response_headers: JSON.stringify({ 'content-type': 'application/json' }),
      request_body_preview: request.slice(0, 256),
      response_body_preview: response.slice(0, 256),
    })!;
    this.body(net.eventId!, 'net_events', 'request', request);
    this.body(net.eventId!, 'net_events', 'response', response);
    const call = this.writer.append('tool_calls', {
      ...trace,
      timestamp: at,
      model_call_id: null,
      provider: 'mcp',
      status: 'responded',
      call_index: 0,
      call_id: `mcp-${net.eventId}-${id}`,
      tool_name: 'snapshots_create',
      arguments: args,
      response_preview: 'ok',
      origin: 'mcp',
      server_name: 'capsem',
      method: 'tools/call',
      request_id: String(id),
      decision: 'allowed',
      duration_ms: 40,
      process_name: 'claude',
      bytes_sent: request.length,
      bytes_received: response.length,
    })!;
    this.writer.append('security_rule_events', {
      event_id: call.eventId!,
      ...trace,
      timestamp: at,
      timestamp_unix_ms: this.clock,
      event_type: 'mcp.tool_call',
      rule_id: 'default.mcp-allow',
      rule_action: 'allow',
      detection_level: 'none',
      event_json: JSON.stringify({ method: 'tools/call', id: String(id), params: { name: 'snapshots_create' } }),
    });
  }

  /** One user-visible turn: model calls that request tools, the tools' results, a final answer. */
  turn(provider: (typeof PROVIDERS)[number]): number {
    if (this.turnsLeftInTrace <= 0) {
      this.traceId = this.rng.hex(16);
      this.turnsLeftInTrace = this.rng.int(1, 3);
    }
    this.turnsLeftInTrace -= 1;
    const turnId = this.rng.hex(16);
    const trace = { trace_id: this.traceId, turn_id: turnId };
    let events = 0;
    let pendingResults: { callId: string; content: string }[] = [];
    const rounds = this.rng.int(1, 3);
    for (let round = 0; round <= rounds; round++) {
      const final = round === rounds;
      const body = requestBody(provider.provider, provider.model, prose(this.rng, this.bodyBytes / 2), pendingResults);
      const request = JSON.stringify(body);
      const asked = requestView(provider.provider, provider.path, body);
      const toolCount = final ? 0 : this.rng.int(1, 3);
      const text = prose(this.rng, 200);
      const response = JSON.stringify({ id: `msg_${this.rng.hex(20)}`, content: text, padding: prose(this.rng, this.bodyBytes / 2) });
      const inTok = this.rng.int(800, 30_000);
      const outTok = this.rng.int(50, 2_000);
      const durationMs = this.rng.int(400, 9_000);
      const startedAt = this.at(50);
      const net = this.writer.append('net_events', {
        ...trace,
        timestamp: startedAt,
        domain: provider.host,
        port: provider.host === 'localhost' ? 11434 : 443,
        decision: 'allowed',
        process_name: 'claude',
        pid: 412,
        method: 'POST',
        path: provider.path,
        status_code: 200,
        bytes_sent: request.length,
        bytes_received: response.length,
        duration_ms: durationMs,
        ttfb_ms: Math.min(durationMs, 350),
        matched_rule: 'default.allow-public',
        request_headers: JSON.stringify({
          'content-type': 'application/json',
          'user-agent': SEED_USER_AGENT,
          'x-api-key': `sha256:${this.rng.hex(16)}`,
        }),
        response_headers: JSON.stringify({ 'content-type': 'text/event-stream' }),
        request_body_preview: request.slice(0, 256),
        response_body_preview: response.slice(0, 256),
      })!;
      this.body(net.eventId!, 'net_events', 'request', request);
      this.body(net.eventId!, 'net_events', 'response', response);
      const call = this.writer.append('model_calls', {
        ...trace,
        net_event_id: net.eventId,
        host: provider.host === 'localhost' ? 'localhost:11434' : provider.host,
        timestamp: startedAt,
        provider: provider.provider,
        model: provider.model,
        process_name: 'claude',
        pid: 412,
        method: 'POST',
        path: provider.path,
        stream: 1,
        messages_count: asked.messages.length,
        tools_count: asked.tools.length,
        request_bytes: request.length,
        request_body_preview: request.slice(0, 256),
        message_id: `msg_${this.rng.hex(20)}`,
        status_code: 200,
        text_content: text,
        thinking_content: final ? null : 'I should look at the code first.',
        stop_reason: final ? provider.stopEnd : provider.stopTool,
        input_tokens: inTok,
        output_tokens: outTok,
        duration_ms: durationMs,
        response_bytes: response.length,
        estimated_cost_usd: (inTok * provider.inPerM + outTok * provider.outPerM) / 1e6,
        usage_details: JSON.stringify({
          cache_read: this.rng.int(0, inTok),
          cache_write: this.rng.int(0, 2000),
          thinking: final ? 0 : this.rng.int(10, 300),
        }),
        // As the recorder records it: the wire format its body is written in.
        wire: detectModelApi(provider.path)!.wire,
      })!;
      this.at(durationMs);
      events += 2;
      let itemIndex = 0;
      const item = (
        kind: 'request' | 'reasoning' | 'response' | 'tool_call' | 'tool_response',
        fields: Record<string, string | null>,
      ): void => {
        this.writer.append('model_items', {
          ...trace,
          timestamp: new Date(this.clock).toISOString(),
          model_call_id: call.id,
          provider: provider.provider,
          model: provider.model,
          path: provider.path,
          kind,
          item_index: itemIndex++,
          ...fields,
        });
      };
      for (const result of pendingResults) {
        this.writer.append('tool_responses', {
          ...trace,
          timestamp: new Date(this.clock).toISOString(),
          model_call_id: call.id,
          call_id: result.callId,
          content_preview: result.content.slice(0, 256),
          is_error: 0,
        });
        item('tool_response', { call_id: result.callId, content: result.content });
        events += 1;
      }
      // As the recorder records it: the prompt, the last user message with text.
      item('request', { content: promptOf(asked) });
      if (!final) item('reasoning', { content: 'I should look at the code first.' });
      item('response', { content: text });
      pendingResults = [];
      for (let i = 0; i < toolCount; i++) {
        const tool = this.rng.pick(TOOLS);
        const callId = `toolu_${this.rng.hex(24)}`;
        const args = JSON.stringify(tool.args(this.rng));
        const mcp = this.rng.next() < 0.15;
        this.writer.append('tool_calls', {
          ...trace,
          timestamp: this.at(5),
          model_call_id: call.id,
          provider: provider.provider,
          status: 'responded',
          call_index: i,
          call_id: callId,
          tool_name: mcp ? 'snapshots_create' : tool.name,
          arguments: args,
          response_preview: 'ok',
          origin: 'native',
          decision: 'allowed',
          duration_ms: this.rng.int(5, 3_000),
          process_name: 'claude',
          bytes_sent: args.length,
          bytes_received: 120,
        })!;
        item('tool_call', { call_id: callId, tool_name: tool.name, arguments: args });
        if (mcp) this.mcpExchange(trace, args);
        if (tool.name === 'Edit' || tool.name === 'Bash') {
          this.writer.append('fs_events', {
            ...trace,
            timestamp: this.at(20),
            action: this.rng.pick(['created', 'modified', 'modified', 'deleted'] as const),
            path: `src/${this.rng.pick(['main.ts', 'server.py', 'app.tsx', 'notes.md'])}`,
            size: this.rng.int(100, 40_000),
          });
          events += 1;
        }
        pendingResults.push({ callId, content: prose(this.rng, 300) });
        events += 1;
      }
    }
    if (this.rng.next() < 0.5) {
      const denied = this.rng.next() < 0.2;
      // As the recorder writes it: only a model call's exchange carries the trace.
      this.writer.append('net_events', {
        timestamp: this.at(30),
        domain: denied ? '169.254.169.254' : this.rng.pick(OTHER_HOSTS),
        decision: denied ? 'denied' : 'allowed',
        process_name: this.rng.pick(['git', 'curl', 'npm']),
        pid: this.rng.int(500, 9000),
        method: 'GET',
        path: denied ? '/latest/meta-data/' : '/index.json',
        status_code: denied ? 403 : 200,
        bytes_sent: 0,
        bytes_received: denied ? 64 : this.rng.int(500, 90_000),
        duration_ms: this.rng.int(20, 800),
        matched_rule: denied ? 'default.deny-link-local' : 'default.allow-public',
      });
      events += 1;
    }
    return events;
  }
}

/** Writes `options.sessions` ended sessions into `home` and rolls each up into main.db. */
export async function seedSessions(home: CapsemHome, options: SeedOptions): Promise<SessionRecord[]> {
  const rng = new Rng(options.seed ?? 1);
  const names = options.names ?? DEFAULT_NAMES;
  const crashedIndex = options.crashedIndex ?? (options.sessions > 1 ? options.sessions - 1 : -1);
  const bodyBytes = options.bodyBytes ?? 4096;
  const mainDb = openMainDb(home);
  const created: SessionRecord[] = [];
  try {
    const dayMs = 86_400_000;
    for (let i = 0; i < options.sessions; i++) {
      const start = Date.now() - (options.sessions - i) * dayMs + rng.int(0, 3_600_000);
      const record = registerSession(mainDb, {
        name: names[i] ?? null,
        mode: 'seed',
        command: 'claude',
        createdAt: new Date(start).toISOString(),
      });
      const paths = sessionPaths(home, record.id);
      let writer: SessionWriter | null = null;
      try {
        ensurePrivateDir(paths.dir);
        writer = await SessionWriter.open(paths.dbPath, {
          session_id: record.id,
          name: record.name ?? '',
          created_at: record.createdAt,
        }).catch((err: unknown) => {
          throw new Error(`cannot open its database ${paths.dbPath}: ${(err as Error).message}`);
        });
        const script = new SessionScript(writer, rng, start, bodyBytes);
        let events = 0;
        while (events < options.events) {
          events += script.turn(rng.pick(PROVIDERS));
          if (writer.needsDrain) await writer.drained();
        }
        await writer.close();
      } catch (err) {
        await writer?.close().catch(() => undefined);
        const reason = `seeding failed: ${(err as Error).message}`;
        endFailedStart(home, record.id, reason, { releaseName: true });
        throw new Error(`${reason} (seeded session ${record.id})`);
      }
      const crashed = i === crashedIndex;
      rollUpSession(
        home,
        mainDb,
        record.id,
        crashed ? { status: 'crashed', reason: 'QEMU exited with signal 9 (seeded crash)' } : { status: 'stopped' },
      );
      created.push(record);
      options.onProgress?.(i + 1, options.sessions);
    }
  } finally {
    mainDb.close();
  }
  return created;
}
