import { openMainDb } from '../store/mainDb.ts';
import { endFailedStart } from '../store/failedStart.ts';
import { ensurePrivateDir, sessionPaths, type CapsemHome } from '../store/paths.ts';
import { registerSession, type SessionRecord } from '../store/registry.ts';
import { rollUpSession } from '../store/rollup.ts';
import { SessionWriter } from '../store/sessionWriter.ts';
import { DEFAULT_BODY_CAP, EMPTY_BODY, type Exchange } from '../proxy/exchange.ts';
import { SessionRecorder } from '../recording/sessionRecorder.ts';
import { modelAnswerWire, type SeedToolCall } from './modelWire.ts';

// Realistic sessions for tests, benchmarks and demos: agent turns that call a model, run tools
// and send the results back, MCP calls, ordinary HTTPS, a denied request, file edits and full
// bodies. Made as a recorded session is: synthetic exchanges in each provider's wire format, fed
// through the recording pipeline (recording/pipeline.ts), so a seeded session cannot drift from a
// recorded one. Deterministic for a given seed (its content; trace and event ids are the
// recorder's own), so a test can assert on what it generated.

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
  },
  {
    provider: 'openai',
    host: 'api.openai.com',
    path: '/v1/chat/completions',
    model: 'gpt-4o',
    stopTool: 'tool_calls',
    stopEnd: 'stop',
  },
  {
    provider: 'google',
    host: 'generativelanguage.googleapis.com',
    path: '/v1beta/models/gemini-2.5-pro:streamGenerateContent',
    model: 'gemini-2.5-pro',
    stopTool: 'STOP',
    stopEnd: 'STOP',
  },
  { provider: 'ollama', host: 'localhost', path: '/api/chat', model: 'qwen3:8b', stopTool: 'stop', stopEnd: 'stop' },
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

const DECLARED_TOOLS = TOOLS.map((t) => ({
  name: t.name,
  description: `The ${t.name} tool`,
  schema: { type: 'object', properties: { command: { type: 'string' } } },
}));

/** The tools as Chat Completions and Ollama's chat declare them. */
const FUNCTION_TOOLS = DECLARED_TOOLS.map((t) => ({
  type: 'function',
  function: { name: t.name, description: t.description, parameters: t.schema },
}));

/** A round of the conversation the agent re-sends: the model's answer and the results of the tools it asked for. */
interface Round {
  readonly text: string;
  readonly tools: readonly SeedToolCall[];
  readonly results: readonly { readonly callId: string; readonly name: string; readonly content: string }[];
}

/** A chat conversation as Chat Completions and Ollama's chat carry it; they differ in how a tool call and its result name each other. */
function chatMessages(
  prompt: string,
  rounds: readonly Round[],
  toolCall: (t: SeedToolCall) => object,
  resultNames: (x: Round['results'][number]) => object,
): unknown[] {
  return [
    { role: 'system', content: 'You are a coding agent.' },
    { role: 'user', content: prompt },
    ...rounds.flatMap((r) => [
      { role: 'assistant', content: r.text, tool_calls: r.tools.map(toolCall) },
      ...r.results.map((x) => ({ role: 'tool', ...resultNames(x), content: x.content })),
    ]),
  ];
}

/** A request body in the provider's own wire shape: the prompt, then every round so far, as an agent re-sends its conversation. */
function requestBody(provider: string, model: string, prompt: string, rounds: readonly Round[]): unknown {
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
          ...rounds.flatMap((r) => [
            {
              role: 'assistant',
              content: [
                { type: 'text', text: r.text },
                ...r.tools.map((t) => ({ type: 'tool_use', id: t.id, name: t.name, input: JSON.parse(t.args) as unknown })),
              ],
            },
            { role: 'user', content: r.results.map((x) => ({ type: 'tool_result', tool_use_id: x.callId, content: x.content })) },
          ]),
        ],
      };
    case 'google':
      return {
        systemInstruction: { parts: [{ text: 'You are a coding agent.' }] },
        tools: [{ functionDeclarations: DECLARED_TOOLS.map((t) => ({ name: t.name, description: t.description, parameters: t.schema })) }],
        contents: [
          { role: 'user', parts: [{ text: prompt }] },
          ...rounds.flatMap((r) => [
            {
              role: 'model',
              parts: [
                { text: r.text },
                ...r.tools.map((t) => ({ functionCall: { id: t.id, name: t.name, args: JSON.parse(t.args) as unknown } })),
              ],
            },
            {
              role: 'user',
              parts: r.results.map((x) => ({ functionResponse: { id: x.callId, name: x.name, response: { output: x.content } } })),
            },
          ]),
        ],
      };
    case 'ollama':
      return {
        model,
        stream: true,
        tools: FUNCTION_TOOLS,
        messages: chatMessages(
          prompt,
          rounds,
          (t) => ({ function: { name: t.name, arguments: JSON.parse(t.args) as unknown } }),
          (x) => ({ tool_name: x.name }),
        ),
      };
    default:
      return {
        model,
        stream: true,
        stream_options: { include_usage: true },
        tools: FUNCTION_TOOLS,
        messages: chatMessages(
          prompt,
          rounds,
          (t) => ({ id: t.id, type: 'function', function: { name: t.name, arguments: t.args } }),
          (x) => ({ tool_call_id: x.callId }),
        ),
      };
  }
}

const SEED_USER_AGENT = 'claude-cli/2.0.14 (external, cli)';
const AGENT = { processName: 'claude', pid: 412 } as const;

const body = (text: string): Exchange['requestBody'] => {
  const bytes = Buffer.from(text);
  return { bytes, total: bytes.length, truncated: false };
};

/** An exchange as the proxy hands it to the recorder once it has ended; `fields` say what differs from an allowed HTTPS request by the agent. */
export function seedExchange(fields: Partial<Exchange> & Pick<Exchange, 'startedAt' | 'host' | 'method' | 'path'>): Exchange {
  return {
    port: 443,
    scheme: 'https',
    kind: 'request',
    query: null,
    requestHeaders: { host: fields.host, 'user-agent': SEED_USER_AGENT },
    responseHeaders: null,
    status: 200,
    requestBody: EMPTY_BODY,
    responseBody: EMPTY_BODY,
    durationMs: 1,
    ttfbMs: null,
    decision: 'allowed',
    matchedRule: 'default.allow-public',
    processName: AGENT.processName,
    pid: AGENT.pid,
    error: null,
    eventId: null,
    parseError: null,
    ...fields,
  };
}

/**
 * One session's script: what an agent does, as synthetic exchanges (request and response heads and
 * bodies in each provider's real wire format), file changes and lookups, fed through the recording
 * pipeline as a recorded session's are, so a seeded session is what a recorded one would be.
 */
class SessionScript {
  private clock: number;
  private mcpCalls = 0;

  constructor(
    private readonly recorder: SessionRecorder,
    private readonly rng: Rng,
    start: number,
    private readonly bodyBytes: number,
  ) {
    this.clock = start;
  }

  private at(stepMs: number): Date {
    this.clock += stepMs;
    return new Date(this.clock);
  }

  /** A JSON-RPC exchange with the session's MCP server. */
  private mcpExchange(request: unknown, response: unknown): void {
    void this.recorder.record(
      seedExchange({
        startedAt: new Date(this.clock),
        host: 'mcp.capsem.dev',
        method: 'POST',
        path: '/mcp',
        requestHeaders: { host: 'mcp.capsem.dev', 'content-type': 'application/json', 'user-agent': SEED_USER_AGENT },
        responseHeaders: { 'content-type': 'application/json' },
        requestBody: body(JSON.stringify(request)),
        responseBody: body(JSON.stringify(response)),
        durationMs: 40,
        ttfbMs: 20,
      }),
    );
  }

  /**
   * The agent calling the MCP tool the model asked for. Every third server answers with a bare
   * string result, as some do. Takes nothing from the rng, so the rest of the script is unchanged.
   */
  private mcpCall(args: string): void {
    const id = ++this.mcpCalls;
    this.mcpExchange(
      { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'snapshots_create', arguments: JSON.parse(args) as unknown } },
      { jsonrpc: '2.0', id, result: id % 3 === 0 ? 'ok' : { content: [{ type: 'text', text: 'ok' }] } },
    );
  }

  /** One user-visible turn: model calls that request tools, the tools' results sent back, a final answer. */
  turn(provider: (typeof PROVIDERS)[number]): number {
    let events = 0;
    const prompt = prose(this.rng, this.bodyBytes / 2);
    const history: Round[] = [];
    const rounds = this.rng.int(1, 3);
    const local = provider.host === 'localhost';
    for (let round = 0; round <= rounds; round++) {
      const final = round === rounds;
      const request = JSON.stringify(requestBody(provider.provider, provider.model, prompt, history));
      const toolCount = final ? 0 : this.rng.int(1, 3);
      const text = prose(this.rng, 200);
      const inTok = this.rng.int(800, 30_000);
      const outTok = this.rng.int(50, 2_000);
      const durationMs = this.rng.int(400, 9_000);
      const tools = Array.from({ length: toolCount }, (): SeedToolCall & { mcp: boolean } => {
        const tool = this.rng.pick(TOOLS);
        const mcp = this.rng.next() < 0.15;
        return {
          id: `toolu_${this.rng.hex(24)}`,
          name: mcp ? 'snapshots_create' : tool.name,
          args: JSON.stringify(tool.args(this.rng)),
          mcp,
        };
      });
      const answer = modelAnswerWire(provider.provider, {
        model: provider.model,
        messageId: `msg_${this.rng.hex(20)}`,
        text,
        thinking: final ? null : 'I should look at the code first.',
        tools,
        stop: final ? provider.stopEnd : provider.stopTool,
        usage: { input: inTok, output: outTok, cacheRead: this.rng.int(0, inTok), cacheWrite: this.rng.int(0, 2000) },
      });
      void this.recorder.record(
        seedExchange({
          startedAt: this.at(50),
          host: provider.host,
          port: local ? 11434 : 443,
          scheme: local ? 'http' : 'https',
          method: 'POST',
          path: provider.path,
          query: provider.provider === 'google' ? 'alt=sse' : null,
          requestHeaders: {
            host: local ? 'localhost:11434' : provider.host,
            'content-type': 'application/json',
            'user-agent': SEED_USER_AGENT,
            ...(local ? {} : { 'x-api-key': `seed-${this.rng.hex(16)}` }),
          },
          responseHeaders: { 'content-type': answer.contentType },
          requestBody: body(request),
          responseBody: body(answer.body),
          durationMs,
          ttfbMs: Math.min(durationMs, 350),
        }),
      );
      this.at(durationMs);
      events += 2 + toolCount;
      const results: Round['results'][number][] = [];
      for (const tool of tools) {
        this.at(5);
        if (tool.mcp) this.mcpCall(tool.args);
        if (tool.name === 'Edit' || tool.name === 'Bash') {
          this.recorder.event('fs', {
            changes: [
              {
                action: this.rng.pick(['created', 'modified', 'modified', 'deleted'] as const),
                path: `src/${this.rng.pick(['main.ts', 'server.py', 'app.tsx', 'notes.md'])}`,
                size: this.rng.int(100, 40_000),
                is_dir: false,
                ts_ms: this.at(20).getTime(),
              },
            ],
          });
          events += 1;
        }
        results.push({ callId: tool.id, name: tool.name, content: prose(this.rng, 300) });
        events += 1;
      }
      history.push({ text, tools, results });
    }
    if (this.rng.next() < 0.5) {
      const denied = this.rng.next() < 0.2;
      const host = denied ? '169.254.169.254' : this.rng.pick(OTHER_HOSTS);
      const received = denied ? 64 : this.rng.int(500, 90_000);
      void this.recorder.record(
        seedExchange({
          startedAt: this.at(30),
          host,
          method: 'GET',
          path: denied ? '/latest/meta-data/' : '/index.json',
          requestHeaders: { host, 'user-agent': SEED_USER_AGENT },
          status: denied ? 403 : 200,
          responseBody: { bytes: Buffer.alloc(0), total: received, truncated: true },
          decision: denied ? 'denied' : 'allowed',
          matchedRule: denied ? 'default.deny-link-local' : 'default.allow-public',
          processName: this.rng.pick(['git', 'curl', 'npm']),
          pid: this.rng.int(500, 9000),
          durationMs: this.rng.int(20, 800),
        }),
      );
      events += 1;
    }
    return events;
  }
}

/** What a seeded session is registered as. */
export interface SeedRegistration {
  readonly name: string | null;
  readonly createdAt: string;
  readonly crashed: boolean;
}

/**
 * Registers one session, records what `feed` hands its recorder through the recording pipeline,
 * and rolls it up into main.db as ended (or crashed). A session whose seeding fails ends crashed
 * with the reason and gives its name up.
 */
export async function recordSeededSession(
  home: CapsemHome,
  mainDb: ReturnType<typeof openMainDb>,
  registration: SeedRegistration,
  feed: (recorder: SessionRecorder, writer: SessionWriter, record: SessionRecord) => Promise<void>,
): Promise<SessionRecord> {
  const record = registerSession(mainDb, { name: registration.name, mode: 'seed', command: 'claude', createdAt: registration.createdAt });
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
    const recorder = new SessionRecorder(writer, DEFAULT_BODY_CAP);
    await feed(recorder, writer, record);
    await recorder.settled();
    if (recorder.failures > 0) throw new Error(`the recorder lost ${recorder.failures} exchanges: ${recorder.lastFailure}`);
    await writer.close();
  } catch (err) {
    await writer?.close().catch(() => undefined);
    const reason = `seeding failed: ${(err as Error).message}`;
    endFailedStart(home, record.id, reason, { releaseName: true });
    throw new Error(`${reason} (seeded session ${record.id})`);
  }
  rollUpSession(
    home,
    mainDb,
    record.id,
    registration.crashed ? { status: 'crashed', reason: 'QEMU exited with signal 9 (seeded crash)' } : { status: 'stopped' },
  );
  return record;
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
      const registration = { name: names[i] ?? null, createdAt: new Date(start).toISOString(), crashed: i === crashedIndex };
      const record = await recordSeededSession(home, mainDb, registration, async (recorder, writer) => {
        const script = new SessionScript(recorder, rng, start, bodyBytes);
        let events = 0;
        while (events < options.events) {
          events += script.turn(rng.pick(PROVIDERS));
          if (writer.needsDrain) await writer.drained();
        }
      });
      created.push(record);
      options.onProgress?.(i + 1, options.sessions);
    }
  } finally {
    mainDb.close();
  }
  return created;
}
