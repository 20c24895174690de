import { modelAnswerWire, type SeedToolCall } from '../../electron/dev/modelWire.ts';
import { Rng } from '../../electron/dev/seedSessions.ts';
import type { Exchange } from '../../electron/proxy/exchange.ts';
import { capturedBody, httpsExchange } from './exchanges.ts';
import type { LiveSession } from './sessionFixture.ts';

// A Claude Code session as the proxy sees it, recorded through the real pipeline: each agent's
// Messages API calls carry its conversation so far (the results of the tools it asked for in
// the call before), a subagent's calls carry X-Claude-Code-Agent-Id (and -Parent-Agent-Id when
// an agent, not the conversation, spawned it), an Agent tool call's result names the agent it
// started (agentId: …), and a subagent's result reaches its parent as an <agent-message>.

export const CLAUDE_CODE_USER_AGENT = 'claude-cli/2.0.14 (external, cli)';
const MODEL = 'claude-sonnet-4-20250514';
/** Rounds of conversation an agent re-sends: enough to carry every pending result, short enough that a 10,000-turn session stays small (as compaction keeps a real one). */
const KEPT_ROUNDS = 3;

interface Round {
  readonly assistant: readonly SeedToolCall[];
  readonly text: string;
  readonly results: readonly { readonly id: string; readonly content: string }[];
  /** Text the user turn carries besides the results: an <agent-message> from a subagent. */
  readonly notes: readonly string[];
}

interface AgentState {
  readonly parent: string | null;
  readonly prompt: string;
  rounds: Round[];
  /** The tools its last call asked for, waiting for their results. */
  pending: SeedToolCall[];
  notes: string[];
}

export interface TurnSpec {
  /** When the call starts, and how long it takes to answer (ms). */
  readonly at: number;
  readonly ms: number;
  /** Tools the model asks for: name and arguments. */
  readonly tools?: readonly { readonly name: string; readonly input: Record<string, unknown>; readonly id?: string }[];
  /** Results for the tools the agent's previous call asked for, by tool id; "ok" for any not given. */
  readonly results?: Readonly<Record<string, string>>;
  readonly text?: string;
}

let toolIds = 0;

export class ClaudeCodeScript {
  private readonly agents = new Map<string, AgentState>();
  private messages = 0;
  /** Every model call recorded: agent, its start and end, and the ids of the tools it asked for. */
  readonly calls: { agent: string; start: number; end: number; tools: string[] }[] = [];

  constructor(private readonly session: Pick<LiveSession, 'recorder' | 'writer'>) {
    this.agents.set('main', { parent: null, prompt: 'Fix the flaky retry test and tidy the logging', rounds: [], pending: [], notes: [] });
  }

  /** A subagent `id` that `parent` spawns; its calls carry its id from its first turn on. */
  spawn(id: string, parent: string, prompt: string): void {
    this.agents.set(id, { parent, prompt, rounds: [], pending: [], notes: [] });
  }

  /** The subagent's final answer reaching the agent that spawned it, in that agent's next call. */
  deliver(id: string, result: string): void {
    const parent = this.agents.get(id)?.parent;
    if (!parent) throw new Error(`no subagent ${id}`);
    this.agents.get(parent)!.notes.push(`<agent-message from="${id}">${result}</agent-message>`);
  }

  /** One model call by `agent`; returns the ids of the tools it asked for. */
  turn(agent: string, spec: TurnSpec): string[] {
    const state = this.agents.get(agent);
    if (!state) throw new Error(`no agent ${agent}`);
    if (state.pending.length > 0 || state.notes.length > 0) {
      state.rounds.push({
        assistant: state.pending,
        text: 'Working on it.',
        results: state.pending.map((t) => ({ id: t.id, content: spec.results?.[t.id] ?? 'ok' })),
        notes: state.notes,
      });
      state.rounds = state.rounds.slice(-KEPT_ROUNDS);
      state.pending = [];
      state.notes = [];
    }
    const tools: SeedToolCall[] = (spec.tools ?? []).map((t) => ({
      id: t.id ?? `toolu_${String(++toolIds).padStart(20, '0')}`,
      name: t.name,
      args: JSON.stringify(t.input),
    }));
    const request = {
      model: MODEL,
      max_tokens: 8192,
      stream: true,
      system: 'You are Claude Code.',
      messages: [
        { role: 'user', content: state.prompt },
        ...state.rounds.flatMap((r) => [
          {
            role: 'assistant',
            content: [
              { type: 'text', text: r.text },
              ...r.assistant.map((t) => ({ type: 'tool_use', id: t.id, name: t.name, input: JSON.parse(t.args) as unknown })),
            ],
          },
          {
            role: 'user',
            content: [
              ...r.results.map((x) => ({ type: 'tool_result', tool_use_id: x.id, content: x.content })),
              ...r.notes.map((text) => ({ type: 'text', text })),
            ],
          },
        ]),
      ],
    };
    const answer = modelAnswerWire('anthropic', {
      model: MODEL,
      messageId: `msg_${++this.messages}`,
      text: spec.text ?? (tools.length > 0 ? 'Let me look.' : 'Done.'),
      thinking: null,
      tools,
      stop: tools.length > 0 ? 'tool_use' : 'end_turn',
      usage: { input: 1200, output: 80, cacheRead: 900, cacheWrite: 0 },
    });
    const headers: Record<string, string> = {
      host: 'api.anthropic.com',
      'content-type': 'application/json',
      'user-agent': CLAUDE_CODE_USER_AGENT,
      'anthropic-version': '2023-06-01',
    };
    if (agent !== 'main') {
      headers['x-claude-code-agent-id'] = agent;
      if (state.parent && state.parent !== 'main') headers['x-claude-code-parent-agent-id'] = state.parent;
    }
    void this.session.recorder.record(
      httpsExchange('api.anthropic.com', '/v1/messages', {
        startedAt: new Date(spec.at),
        method: 'POST',
        requestHeaders: headers,
        responseHeaders: { 'content-type': answer.contentType },
        requestBody: capturedBody(JSON.stringify(request)),
        responseBody: capturedBody(answer.body),
        durationMs: spec.ms,
        ttfbMs: Math.min(spec.ms, 300),
        processName: 'claude',
      }),
    );
    state.pending = tools;
    this.calls.push({ agent, start: spec.at, end: spec.at + spec.ms, tools: tools.map((t) => t.id) });
    return tools.map((t) => t.id);
  }

  /** A request a tool makes (git, npm, curl), outside any model call. */
  request(host: string, path: string, at: number, ms: number, fields: Partial<Exchange> = {}): void {
    void this.session.recorder.record(
      httpsExchange(host, path, { startedAt: new Date(at), durationMs: ms, processName: 'git', requestHeaders: { host }, ...fields }),
    );
  }

  /** Waits for the writer when it asks to (a long script records faster than it writes). */
  async drain(): Promise<void> {
    if (this.session.writer.needsDrain) await this.session.writer.drained();
  }
}

const TOOLS = [
  {
    name: 'Bash',
    input: (r: Rng) => ({ command: r.pick(['npm test', 'git status', 'git diff --stat', 'rg "retry" -n src', 'npm run lint']) }),
  },
  { name: 'Read', input: (r: Rng) => ({ file_path: `/workspace/src/${r.pick(['retry.ts', 'log.ts', 'client.ts', 'index.ts'])}` }) },
  {
    name: 'Edit',
    input: (r: Rng) => ({ file_path: `/workspace/src/${r.pick(['retry.ts', 'log.ts'])}`, old_string: 'a', new_string: 'b' }),
  },
  { name: 'Grep', input: (r: Rng) => ({ pattern: r.pick(['retryBudget', 'TODO', 'logger\\.']), path: '/workspace' }) },
] as const;
const SUBAGENT_TYPES = ['Explore', 'general-purpose', 'Plan'] as const;
const BUSY_HOSTS = ['github.com', 'registry.npmjs.org', 'objects.githubusercontent.com', 'pypi.org'];

export interface StoryOptions {
  /** Model calls in all, across the main agent and its subagents. */
  readonly turns: number;
  /** About how long the session runs. */
  readonly hours: number;
  readonly seed?: number;
  /** When the first call starts (epoch ms). */
  readonly start?: number;
}

/**
 * Records a long Claude Code session through `session`'s recorder: the main agent works through
 * prompts, calling tools; now and then it spawns subagents (Agent tool calls, two at once
 * sometimes, a subagent spawning its own), waits for them, and gets their results back; tools
 * fetch from a few busy hosts and a long tail of others. Calls are recorded in time order.
 */
export async function recordClaudeCodeStory(
  session: Pick<LiveSession, 'recorder' | 'writer'>,
  options: StoryOptions,
): Promise<ClaudeCodeScript> {
  const rng = new Rng(options.seed ?? 30);
  const script = new ClaudeCodeScript(session);
  const start = options.start ?? Date.parse('2025-03-03T08:00:00Z');
  // Each call plus its tools takes about half a step on average.
  const step = (options.hours * 3_600_000) / options.turns / 0.5;
  const actions: { at: number; order: number; run: () => void }[] = [];
  const schedule = (at: number, run: () => void) => actions.push({ at, order: actions.length, run });
  let made = 0;

  const work = (agent: string, from: number, calls: number, depth: number): number => {
    let t = from;
    for (let k = 0; k < calls && made < options.turns; k++) {
      made += 1;
      const last = k === calls - 1 || made === options.turns;
      const ms = Math.round(rng.int(25, 55) * step * 0.01);
      const tools = last ? [] : Array.from({ length: rng.int(0, 10) < 2 ? 2 : 1 }, () => rng.pick(TOOLS));
      const children: { id: string; type: string }[] = [];
      if (!last && depth < 2 && made + 8 < options.turns && rng.next() < (depth === 0 ? 0.06 : 0.08)) {
        const count = depth === 0 && rng.next() < 0.3 ? 2 : 1;
        for (let c = 0; c < count; c++) children.push({ id: `a${rng.hex(16)}`, type: rng.pick(SUBAGENT_TYPES) });
      }
      const specTools = [
        ...tools.map((tool) => ({ name: tool.name, input: tool.input(rng) as Record<string, unknown> })),
        ...children.map((child) => ({
          name: 'Agent',
          id: `toolu_spawn_${child.id}`,
          input: { description: `Survey ${child.id.slice(1, 5)}`, subagent_type: child.type, prompt: 'Find where retries are counted' },
        })),
      ];
      const at = t;
      schedule(at, () => script.turn(agent, { at, ms, tools: specTools, results: resultsFor(agent) }));
      t += ms;
      let done = t;
      for (let i = 0; i < tools.length; i++) {
        const toolMs = rng.int(2, 25) * step * 0.01;
        if (rng.next() < 0.15) {
          const host = rng.next() < 0.7 ? rng.pick(BUSY_HOSTS) : `mirror-${rng.int(1, 40)}.example.org`;
          const reqAt = t + 5;
          const reqMs = Math.max(5, Math.round(toolMs * 0.6));
          schedule(reqAt, () => script.request(host, '/pack.tgz', reqAt, reqMs));
        }
        done = Math.max(done, t + toolMs);
      }
      for (const child of children) {
        const spawnedAt = t + 20;
        schedule(spawnedAt - 1, () => script.spawn(child.id, agent, 'Find where retries are counted'));
        const childEnd = work(child.id, spawnedAt, rng.int(4, 25), depth + 1);
        const returned = childEnd + 10;
        schedule(returned, () => {
          script.deliver(child.id, 'The retry budget is read in src/retry.ts.');
          pendingResults(agent)[`toolu_spawn_${child.id}`] = `The retry budget is read in src/retry.ts.\nagentId: ${child.id}`;
        });
        done = Math.max(done, returned);
      }
      t = Math.round(done + rng.int(1, 8) * step * 0.01);
    }
    return t;
  };
  const results = new Map<string, Record<string, string>>();
  const pendingResults = (agent: string): Record<string, string> => {
    if (!results.has(agent)) results.set(agent, {});
    return results.get(agent)!;
  };
  const resultsFor = (agent: string): Record<string, string> => {
    const given = pendingResults(agent);
    results.set(agent, {});
    return given;
  };

  let t = start;
  while (made < options.turns) t = work('main', t, rng.int(5, 40), 0) + rng.int(5, 60) * step * 0.01;
  actions.sort((a, b) => a.at - b.at || a.order - b.order);
  for (const action of actions) {
    action.run();
    await script.drain();
  }
  return script;
}
