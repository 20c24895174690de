import type { SessionId } from '../../electron/contract/ids.ts';
import { modelAnswerWire, type SeedToolCall } from '../../electron/dev/modelWire.ts';
import type { CapsemHome } from '../../electron/store/paths.ts';
import { modelExchange } from './exchanges.ts';
import { liveSession, recordFileChange, type LiveSession } from './sessionFixture.ts';

// An agent's conversation with the Messages API, recorded call by call through the pipeline as a
// coding agent makes it: each request re-sends the whole conversation so far (the user's prompts,
// the model's answers and tool uses, the tool results), each answer streams back in Anthropic's
// events, and the files the agent's tools change land between calls. What the Conversation reads
// is then what a recorded agent session holds.

export interface StoryResult {
  readonly callId: string;
  readonly content: string;
  readonly isError?: boolean;
}

export interface StoryCall {
  /** A new user message this call sends (after any results, as a user types once the agent stopped). */
  readonly prompt?: string;
  /** The results of the previous answer's tool uses, sent back in this call. */
  readonly results?: readonly StoryResult[];
  readonly text?: string;
  readonly thinking?: string;
  readonly tools?: readonly SeedToolCall[];
  /** An error status (529 overloaded): the answer is the API's error, and the conversation stays as it was sent. */
  readonly status?: number;
  readonly durationMs?: number;
  readonly usage?: { readonly input: number; readonly output: number; readonly cacheRead?: number; readonly cacheWrite?: number };
  /** Paths the agent's tools change after this answer, before its next call. */
  readonly files?: readonly string[];
}

let messageIds = 0;

export class AnthropicStory {
  private readonly messages: unknown[] = [];
  private clock: number;

  constructor(
    private readonly session: Pick<LiveSession, 'recorder'>,
    start: string | number = '2026-03-01T10:00:00.000Z',
    private readonly model = 'claude-sonnet-4-20250514',
    /** Messages each request re-sends at most, from a user message on (an agent that compacts its context); all of them unless said. */
    private readonly history = Infinity,
  ) {
    this.clock = typeof start === 'number' ? start : Date.parse(start);
  }

  /** Where this agent's clock stands (two agents' stories can be interleaved by it). */
  get now(): number {
    return this.clock;
  }

  /** Moves the clock on (another agent worked meanwhile). */
  wait(ms: number): void {
    this.clock += ms;
  }

  /** A file change the agent's tools make now, as the guest reports it. */
  file(path: string): void {
    recordFileChange(this.session, path, { ts_ms: this.clock, action: 'modified', size: 100 });
    this.clock += 1;
  }

  async call(step: StoryCall): Promise<void> {
    const blocks: unknown[] = (step.results ?? []).map((r) => ({
      type: 'tool_result',
      tool_use_id: r.callId,
      content: r.content,
      ...(r.isError ? { is_error: true } : {}),
    }));
    if (step.prompt !== undefined) blocks.push({ type: 'text', text: step.prompt });
    if (blocks.length > 0) this.messages.push({ role: 'user', content: blocks });
    const from = this.messages.findIndex((m, i) => i >= this.messages.length - this.history && (m as { role: string }).role === 'user');
    const messages = this.messages.slice(Math.max(0, from));
    const request = { model: this.model, max_tokens: 8192, stream: true, system: 'You are a coding agent.', messages };
    const tools = step.tools ?? [];
    const failed = step.status !== undefined && step.status >= 400;
    const answer = failed
      ? {
          contentType: 'application/json',
          body: JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }),
        }
      : modelAnswerWire('anthropic', {
          model: this.model,
          messageId: `msg_story_${++messageIds}`,
          text: step.text ?? '',
          thinking: step.thinking ?? null,
          tools,
          stop: tools.length > 0 ? 'tool_use' : 'end_turn',
          usage: { cacheRead: 0, cacheWrite: 0, input: 100, output: 20, ...step.usage },
        });
    const durationMs = step.durationMs ?? 1000;
    await this.session.recorder.record(
      modelExchange('api.anthropic.com', '/v1/messages', Buffer.from(JSON.stringify(request)), Buffer.from(answer.body), {
        startedAt: new Date(this.clock),
        durationMs,
        status: step.status ?? 200,
        responseHeaders: { 'content-type': answer.contentType },
        processName: 'claude',
      }),
    );
    this.clock += durationMs;
    if (!failed) {
      const content: unknown[] = step.text ? [{ type: 'text', text: step.text }] : [];
      for (const t of tools) content.push({ type: 'tool_use', id: t.id, name: t.name, input: JSON.parse(t.args) as unknown });
      this.messages.push({ role: 'assistant', content });
    }
    for (const path of step.files ?? []) this.file(path);
    this.clock += 100;
  }
}

const WORDS = 'the agent reads the failing test then edits the retry budget so the request loop stops after three attempts'.split(' ');
const words = (n: number, salt: number): string => Array.from({ length: n }, (_, i) => WORDS[(i * 7 + salt) % WORDS.length]).join(' ');

/**
 * An ended session of `turns` model calls by one agent, recorded call by call through the
 * pipeline: a new prompt every tenth call, a markdown answer, one or two tool calls whose results
 * go back in the next call, a file change every third. Its requests re-send the last few rounds,
 * as an agent that compacts its context does, so recording stays linear in `turns`.
 */
export async function bigConversation(home: CapsemHome, name: string, turns: number): Promise<SessionId> {
  const session = await liveSession(home, name);
  const agent = new AnthropicStory(session, '2026-03-01T08:00:00.000Z', undefined, 6);
  let asked: { id: string; name: string }[] = [];
  for (let i = 0; i < turns; i++) {
    const tools = Array.from({ length: 1 + (i % 2) }, (_, k) => ({
      id: `toolu_${i}_${k}`,
      name: k === 0 ? 'Bash' : 'Read',
      args: JSON.stringify(k === 0 ? { command: `npm test -- --grep step${i}` } : { file_path: `src/step${i % 50}.ts` }),
    }));
    await agent.call({
      ...(i % 10 === 0 ? { prompt: `Step ${i}: ${words(40, i)}` } : {}),
      results: asked.map((t, k) => ({ callId: t.id, content: `${t.name} output ${i}.${k}\n${words(80, i + k)}` })),
      text: `**Turn ${i}.** ${words(50, i)}\n\n- ${words(8, i + 1)}\n- ${words(8, i + 2)}`,
      thinking: i % 4 === 0 ? words(30, i + 3) : undefined,
      tools,
      durationMs: 800,
      files: i % 3 === 0 ? [`src/step${i % 50}.ts`] : [],
    });
    asked = tools;
    if (session.writer.needsDrain) await session.writer.drained();
  }
  await session.end();
  return session.id;
}
