import { AGENT_ID_HEADER, PARENT_AGENT_ID_HEADER } from '../telemetry/claudeCode.ts';
import { modelAnswerWire, type SeedToolCall } from './modelWire.ts';

// Claude Code's model calls as it sends them, for the sessions `capsem dev seed` records and the
// tests that record a Claude Code session: one agent's conversation (the main one, or a subagent
// named by its agent-id headers) re-sent whole with every request, the tools Claude Code declares,
// the answer streamed back as Anthropic's events, and the texts Claude Code writes into the
// conversation: a background command's acknowledgement, an Agent call's result, a task notification,
// a subagent's hand-back message.

export const CLAUDE_CODE_USER_AGENT = 'claude-cli/2.1.332 (external, cli)';
export const CLAUDE_CODE_MODEL = 'claude-sonnet-4-5-20250929';

const SYSTEM = "You are Claude Code, Anthropic's official CLI for Claude.";
/** The tools a Claude Code agent declares, as the request's tools list names them. */
const DECLARED = ['Agent', 'Bash', 'Read', 'Edit', 'Grep', 'SubagentHandback'].map((name) => ({
  name,
  description: `The ${name} tool`,
  input_schema: { type: 'object', properties: {} },
}));

/** A tool's result as Claude Code sends it back. */
export interface ToolResult {
  readonly id: string;
  readonly content: string;
  readonly isError?: boolean;
}

/** What the model answers one call with. */
export interface ClaudeCodeAnswer {
  readonly text?: string;
  readonly tools?: readonly SeedToolCall[];
  readonly stop?: string;
  readonly usage?: { readonly input: number; readonly output: number; readonly cacheRead: number; readonly cacheWrite: number };
  /** false for a call whose answer never reached the agent (it failed): the agent re-sends the same conversation. */
  readonly joins?: boolean;
}

/** The parts of an exchange a Claude Code model call decides: where it went, its headers and both bodies. */
export interface ClaudeCodeCall {
  readonly host: string;
  readonly method: 'POST';
  readonly path: string;
  readonly requestHeaders: Record<string, string>;
  readonly responseHeaders: Record<string, string>;
  readonly request: Buffer;
  readonly response: Buffer;
}

let answers = 0;

/** One Claude Code agent's conversation, as it grows and is re-sent with each of its model calls. */
export class ClaudeCodeConversation {
  private readonly messages: { role: 'user' | 'assistant'; content: unknown }[] = [];

  constructor(
    /** The agent's id, for a subagent; and the agent that started it, when that was itself one. */
    readonly agent: { readonly id?: string; readonly parent?: string } = {},
    private readonly tools: readonly { name: string; description: string; input_schema: unknown }[] = DECLARED,
  ) {}

  /** A fork: another agent that starts from this conversation as it is now. */
  fork(agent: { readonly id?: string; readonly parent?: string }): ClaudeCodeConversation {
    const fork = new ClaudeCodeConversation(agent, this.tools);
    fork.messages.push(...(structuredClone(this.messages) as typeof this.messages));
    return fork;
  }

  /** What the user (or Claude Code on its behalf: a notification, an agent's message) says next. */
  say(text: string): this {
    this.messages.push({ role: 'user', content: [{ type: 'text', text }] });
    return this;
  }

  /** Consecutive user messages joined into one, their blocks in order, as Claude Code re-sends its history. */
  mergeUserTurns(): this {
    const merged: typeof this.messages = [];
    for (const message of this.messages) {
      const last = merged.at(-1);
      if (last?.role === 'user' && message.role === 'user')
        last.content = [...(last.content as unknown[]), ...(message.content as unknown[])];
      else merged.push({ ...message });
    }
    this.messages.splice(0, this.messages.length, ...merged);
    return this;
  }

  /** The tools' results, sent back in one user message, with any text Claude Code adds after them. */
  results(results: readonly ToolResult[], ...texts: string[]): this {
    this.messages.push({
      role: 'user',
      content: [
        ...results.map((r) => ({ type: 'tool_result', tool_use_id: r.id, content: r.content, ...(r.isError ? { is_error: true } : {}) })),
        ...texts.map((text) => ({ type: 'text', text })),
      ],
    });
    return this;
  }

  /** The request of the next call: the conversation as it is now. */
  private requestBody(model: string): Buffer {
    return Buffer.from(
      JSON.stringify({
        model,
        max_tokens: 32000,
        stream: true,
        system: [{ type: 'text', text: SYSTEM }],
        tools: this.tools,
        messages: this.messages,
      }),
    );
  }

  /** The next model call, answered by `answer`: the answer joins the conversation, as Claude Code keeps it. */
  call(answer: ClaudeCodeAnswer = {}, model = CLAUDE_CODE_MODEL): ClaudeCodeCall {
    const tools = answer.tools ?? [];
    const request = this.requestBody(model);
    const text = answer.text ?? 'Done.';
    const wire = modelAnswerWire('anthropic', {
      model,
      messageId: `msg_cc${++answers}`,
      text,
      thinking: null,
      tools,
      stop: answer.stop ?? (tools.length > 0 ? 'tool_use' : 'end_turn'),
      usage: answer.usage ?? { input: 1200, output: 80, cacheRead: 0, cacheWrite: 0 },
    });
    if (answer.joins !== false)
      this.messages.push({
        role: 'assistant',
        content: [
          { type: 'text', text },
          ...tools.map((t) => ({ type: 'tool_use', id: t.id, name: t.name, input: JSON.parse(t.args) as unknown })),
        ],
      });
    return {
      host: 'api.anthropic.com',
      method: 'POST',
      path: '/v1/messages',
      requestHeaders: {
        host: 'api.anthropic.com',
        'content-type': 'application/json',
        'user-agent': CLAUDE_CODE_USER_AGENT,
        'anthropic-version': '2023-06-01',
        ...(this.agent.id !== undefined ? { [AGENT_ID_HEADER]: this.agent.id } : {}),
        ...(this.agent.parent !== undefined ? { [PARENT_AGENT_ID_HEADER]: this.agent.parent } : {}),
      },
      responseHeaders: { 'content-type': wire.contentType },
      request,
      response: Buffer.from(wire.body),
    };
  }
}

// The texts below are Claude Code 2.1.332's own, from its binary; paths and figures are made up.

/** The Bash tool's answer to a command it runs in the background (`run_in_background`). */
export const backgroundAck = (jobId: string): string =>
  `Command running in background with ID: ${jobId}. Output is being written to: /tmp/claude-0/-workspace/tasks/${jobId}.output. You will be notified when it completes. To check interim output, use Read on that file path.`;

/** An Agent call's result when its subagent ran in the foreground: the subagent's report, then the lines naming it. */
export const agentResult = (agentId: string, report: string): string =>
  `${report}\nagentId: ${agentId} (use SendMessage with to: '${agentId}', summary: '<5-10 word recap>' to continue this agent)\n<usage>subagent_tokens: 5120\ntool_uses: 3\nduration_ms: 41000</usage>`;

/** An Agent call's result when its subagent runs in the background, as agents do by default. */
export const asyncAgentResult = (agentId: string): string =>
  `Async agent launched successfully. (This tool result is internal metadata \u2014 never quote or paste any part of it, including the agentId below, into a user-facing reply.)\nagentId: ${agentId} (internal ID - do not mention to user. Use SendMessage with to: '${agentId}', summary: '<5-10 word recap>' to continue this agent.)\nIn your own words, briefly tell the user what you launched \u2014 do not echo this tool result. Agent results will arrive in a subsequent message.`;

/** What ended: a task's id, the tool call that started it, how it ended and its summary line. */
export interface EndedTask {
  readonly taskId: string;
  readonly toolUseId: string;
  readonly summary: string;
  readonly status?: 'completed' | 'failed' | 'killed';
}

/**
 * The notification Claude Code adds to its agent's next request when a background task (a command,
 * an agent) ends: a user message when the agent is idle, appended to the next tool result while a
 * tool round is in flight.
 */
export const taskNotification = (task: EndedTask): string =>
  `<system-reminder>\n[SYSTEM NOTIFICATION - NOT USER INPUT]\nThis is an automated background-task event, NOT a message from the user.\nDo NOT interpret this as user acknowledgement, confirmation, or response to any pending question.\n\n<task-notification>\n<task-id>${task.taskId}</task-id>\n<tool-use-id>${task.toolUseId}</tool-use-id>\n<output-file>/tmp/claude-0/-workspace/tasks/${task.taskId}.output</output-file>\n<status>${task.status ?? 'completed'}</status>\n<summary>${task.summary}</summary>\n</task-notification>\n</system-reminder>`;

/** A subagent's report handed back (its SubagentHandback call) as a message to the agent that started it. */
export const agentMessage = (from: string, report: string): string => `<agent-message from="${from}">\n${report}\n</agent-message>`;

/** The SubagentHandback call a subagent ends its run with, carrying its report. */
export const handbackArgs = (report: string): string => JSON.stringify({ message: report, kind: 'report' });
