import type { Exchange } from '../proxy/exchange.ts';
import type { SessionRecorder } from '../recording/sessionRecorder.ts';
import { openMainDb } from '../store/mainDb.ts';
import type { CapsemHome } from '../store/paths.ts';
import type { SessionRecord } from '../store/registry.ts';
import {
  agentMessage,
  agentResult,
  asyncAgentResult,
  backgroundAck,
  ClaudeCodeConversation,
  handbackArgs,
  taskNotification,
  type ClaudeCodeAnswer,
  type ClaudeCodeCall,
  type ToolResult,
} from './claudeCodeWire.ts';
import type { SeedToolCall } from './modelWire.ts';
import { prose, recordSeededSession, Rng, seedExchange } from './seedSessions.ts';

// A Claude Code session as its story is told (the timeline's agents, turns, tools, jobs and
// returns): episodes in which the main agent runs tools, starts subagents in the foreground and in
// the background (a subagent of its own now and then), runs commands in the background and is
// told when they end, retries an overloaded call, and makes its side calls (a title, progress
// labels). Made as every seeded session is: Claude Code's own requests and Anthropic's streamed
// answers, fed through the recording pipeline. Deterministic for a given seed.

export interface StorySeedOptions {
  /** How many model calls the session makes, side calls included. */
  readonly turns: number;
  readonly seed?: number;
  readonly name?: string | null;
  readonly onProgress?: (calls: number) => void;
  /** Told the session once it is entered, before its first call is recorded. */
  readonly onRecording?: (record: SessionRecord) => void;
}

const COMMANDS = ['npm test', 'git status', 'rg -n "retry" src', 'ls -la src', 'python3 -m pytest -q'];
const FILES = ['src/parse.ts', 'src/retry.ts', 'README.md', 'test/parse.test.ts'];
const LABEL_PROMPT =
  'Describe your most recent action in 3-5 words using present tense (-ing). Name the file or function, not the branch. Do not use tools.';

class StoryScript {
  private clock: number;
  private ids = 0;
  calls = 0;

  constructor(
    private readonly recorder: SessionRecorder,
    private readonly rng: Rng,
    start: number,
  ) {
    this.clock = start;
  }

  /** A new id in the shape Claude Code's have: a tool call's, an agent's (`a` and 16 hex digits), a job's (`b` and 8 characters). */
  private id(kind: 'tool' | 'subagent' | 'job'): string {
    const n = ++this.ids;
    if (kind === 'subagent') return `a${n.toString(16).padStart(16, '0')}`;
    if (kind === 'job') return `b${n.toString(36).padStart(8, '0')}`;
    return `toolu_01${n.toString(36).padStart(22, '0')}`;
  }

  private record(call: ClaudeCodeCall, durationMs: number, fields: Partial<Exchange> = {}): void {
    this.calls += 1;
    void this.recorder.record(claudeCodeExchange(call, new Date(this.clock), durationMs, fields));
    this.clock += durationMs + this.rng.int(20, 400);
  }

  /** One model call of `agent`, answered with `answer`; a tool-asking answer's tools then run a while. */
  private call(agent: ClaudeCodeConversation, answer: ClaudeCodeAnswer): void {
    const usage = {
      input: this.rng.int(2_000, 60_000),
      output: this.rng.int(40, 1_500),
      cacheRead: this.rng.int(0, 50_000),
      cacheWrite: 0,
    };
    this.record(agent.call({ text: prose(this.rng, 160), usage, ...answer }), this.rng.int(800, 6_000));
  }

  private tool(): SeedToolCall {
    const id = this.id('tool');
    return this.rng.next() < 0.5
      ? { id, name: 'Bash', args: JSON.stringify({ command: this.rng.pick(COMMANDS) }) }
      : { id, name: 'Read', args: JSON.stringify({ file_path: this.rng.pick(FILES) }) };
  }

  private results(tools: readonly SeedToolCall[]): ToolResult[] {
    return tools.map((t) => ({ id: t.id, content: prose(this.rng, 240) }));
  }

  /** An agent's tool loop: calls that ask for tools, their results sent back, then a call that answers. */
  private work(agent: ClaudeCodeConversation, rounds: number): void {
    for (let round = 0; round < rounds; round++) {
      const tools = Array.from({ length: this.rng.int(1, 2) }, () => this.tool());
      this.call(agent, { tools });
      this.clock += this.rng.int(200, 5_000);
      agent.results(this.results(tools));
    }
  }

  private sideCalls(main: ClaudeCodeConversation, first: boolean): void {
    if (first)
      this.call(new ClaudeCodeConversation({}, []).say(`<session>\n${prose(this.rng, 80)}\n</session>\n`), {
        text: '{"title":"Fix the retry budget"}',
      });
    if (this.rng.next() < 0.3) this.call(main.fork({}).say(LABEL_PROMPT), { text: 'Reading parse.ts' });
  }

  /** A subagent run to its end: its own tool loop, a subagent of its own now and then, and its answer. */
  private subagent(id: string, parent: string | undefined, depth: number): void {
    const sub = new ClaudeCodeConversation({ id, ...(parent !== undefined ? { parent } : {}) }).say(prose(this.rng, 120));
    this.work(sub, this.rng.int(1, 3));
    if (depth === 0 && this.rng.next() < 0.25) {
      const nested = this.id('subagent');
      const spawn = this.spawnCall('general-purpose', false);
      this.call(sub, { tools: [spawn] });
      this.subagent(nested, id, depth + 1);
      sub.results([{ id: spawn.id, content: agentResult(nested, prose(this.rng, 200)) }]);
    }
    this.call(sub, {});
  }

  private spawnCall(type: string, background: boolean): SeedToolCall {
    return {
      id: this.id('tool'),
      name: 'Agent',
      args: JSON.stringify({
        description: prose(this.rng, 24),
        prompt: prose(this.rng, 120),
        subagent_type: type,
        run_in_background: background,
      }),
    };
  }

  /** One prompt of the user's and everything the agents do about it. */
  episode(first: boolean): void {
    const main = new ClaudeCodeConversation().say(prose(this.rng, 200));
    this.sideCalls(main, first);
    const kind = this.rng.next();
    if (kind < 0.15) {
      // Overloaded, then the same conversation again.
      this.record(main.call({ joins: false }), 300, { status: 529, responseBody: { bytes: Buffer.alloc(0), total: 0, truncated: false } });
    }
    this.work(main, this.rng.int(1, 3));
    if (kind > 0.95) {
      // The network went away for a moment: a side call's model host could not be dialled.
      this.record(new ClaudeCodeConversation({}, []).say('title').call({ joins: false }), 20, {
        status: 502,
        ttfbMs: null,
        responseHeaders: null,
        responseBody: { bytes: Buffer.alloc(0), total: 0, truncated: false },
        error: { kind: 'upstream_refused', message: 'api.anthropic.com:443 refused the connection' },
      });
    }
    if (kind < 0.35) {
      const type = this.rng.pick(['general-purpose', 'Explore', 'fork']);
      const spawn = this.spawnCall(type, false);
      this.call(main, { tools: [spawn] });
      const id = this.id('subagent');
      this.subagent(id, undefined, 0);
      // A foreground Explore agent's result names no agent, nor a fork's.
      const report = prose(this.rng, 200);
      main.results([{ id: spawn.id, content: type === 'general-purpose' ? agentResult(id, report) : report }]);
    } else if (kind < 0.6) {
      const spawn = this.spawnCall('general-purpose', true);
      this.call(main, { tools: [spawn] });
      const id = this.id('subagent');
      main.results([{ id: spawn.id, content: asyncAgentResult(id) }]);
      this.call(main, {});
      const sub = new ClaudeCodeConversation({ id }).say(prose(this.rng, 120));
      this.work(sub, this.rng.int(1, 3));
      const report = prose(this.rng, 200);
      this.call(sub, { tools: [{ id: this.id('tool'), name: 'SubagentHandback', args: handbackArgs(report) }] });
      main.say(`${agentMessage(id, report)}\n${taskNotification({ taskId: id, toolUseId: spawn.id, summary: 'Agent "survey" finished' })}`);
    } else if (kind < 0.8) {
      const job = this.id('job');
      const serve = { id: this.id('tool'), name: 'Bash', args: JSON.stringify({ command: 'npm run serve', run_in_background: true }) };
      this.call(main, { tools: [serve] });
      main.results([{ id: serve.id, content: backgroundAck(job) }]);
      this.work(main, this.rng.int(0, 1));
      // It ends while the agent waits on another command: the notification comes with that command's result.
      const wait = { id: this.id('tool'), name: 'Bash', args: JSON.stringify({ command: 'sleep 5' }) };
      this.call(main, { tools: [wait] });
      const ended = taskNotification({
        taskId: job,
        toolUseId: serve.id,
        summary: 'Background command "npm run serve" completed (exit code 0)',
      });
      main.results([{ id: wait.id, content: `(Bash completed with no output)\n\n${ended}` }]);
    }
    this.call(main, {});
  }
}

/** Records one Claude Code session of about `options.turns` model calls into `home`, ended, and rolls it up. */
export async function seedStorySession(home: CapsemHome, options: StorySeedOptions): Promise<SessionRecord> {
  const rng = new Rng(options.seed ?? 1);
  const mainDb = openMainDb(home);
  try {
    const start = Date.now() - 86_400_000;
    const registration = { name: options.name ?? null, createdAt: new Date(start).toISOString(), crashed: false };
    return await recordSeededSession(home, mainDb, registration, async (recorder, writer, record) => {
      options.onRecording?.(record);
      const script = new StoryScript(recorder, rng, start);
      for (let first = true; script.calls < options.turns; first = false) {
        script.episode(first);
        if (writer.needsDrain) await writer.drained();
        options.onProgress?.(script.calls);
      }
    });
  } finally {
    mainDb.close();
  }
}

/** A Claude Code model call as the proxy hands an exchange to the recorder: sent at `startedAt`, answered over `durationMs`. */
export function claudeCodeExchange(call: ClaudeCodeCall, startedAt: Date, durationMs: number, fields: Partial<Exchange> = {}): Exchange {
  return seedExchange({
    startedAt,
    host: call.host,
    method: call.method,
    path: call.path,
    requestHeaders: call.requestHeaders,
    responseHeaders: call.responseHeaders,
    requestBody: { bytes: call.request, total: call.request.length, truncated: false },
    responseBody: { bytes: call.response, total: call.response.length, truncated: false },
    durationMs,
    ttfbMs: Math.min(durationMs, 400),
    ...fields,
  });
}
