// What a model API request asked for, in one shape for every provider: the conversation, the
// declared tools, the tool calls earlier turns made and the tool results sent back, and the
// sampling settings. Pure: a parsed JSON body in, a view out; unknown shapes give empty lists.
// Each provider's reader lives with its provider (providers/); these are the pieces they build with.

import { arr, isObject, jsonBytes, num, str, type Json } from './json.ts';
import type { DeclaredTool, InferenceMessage, ToolCallView, ToolResultView } from '../contract/sessionEvent.ts';

/** A tool call in a conversation's history, with the provider's id when it gave one. */
export interface TurnCall {
  readonly id: string | null;
  readonly name: string;
  readonly arguments: string;
}

/** A tool result sent back in a conversation, with the call's id or the tool's name when the provider carries them. */
export interface TurnResult {
  readonly id: string | null;
  readonly name: string | null;
  readonly content: string;
  readonly isError: boolean;
}

/** One turn of the conversation as the request re-sends it: what links a tool result to the call it answers. */
export interface ConversationTurn {
  readonly role: string;
  readonly text: string;
  readonly calls: TurnCall[];
  readonly results: TurnResult[];
}

export interface RequestView {
  messages: InferenceMessage[];
  tools: DeclaredTool[];
  historyToolCalls: ToolCallView[];
  toolResults: ToolResultView[];
  /** The conversation turn by turn, for the tool ledger; not part of the API's view. */
  turns: ConversationTurn[];
  toolChoice?: unknown;
  temperature?: number;
  maxTokens?: number;
  topP?: number;
  stream?: true;
}

/**
 * Text of a content value: a string, or the text of its text blocks. A tool result inside a
 * message (Anthropic's tool_result block) is not the message's text: it is read as a result.
 */
export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  return arr(content)
    .map((block) => (isObject(block) ? str(block.text) : str(block)))
    .filter((t): t is string => t !== undefined && t.length > 0)
    .join('\n');
}

/**
 * The prompt of a request: the last user message that holds text, which is what the user said.
 * A user message that only carries tool results back (Anthropic's tool_result blocks, Gemini's
 * functionResponse parts) has no text; Chat Completions', Responses' and Ollama's results are
 * messages of role tool.
 */
export function promptOf(view: RequestView): string | null {
  return view.messages.findLast((m) => m.role === 'user' && m.content !== '')?.content ?? null;
}

export function message(role: string, content: unknown, extra: Partial<InferenceMessage> = {}): InferenceMessage {
  const m: InferenceMessage = { role, content: textOf(content), contentBytes: jsonBytes(content) };
  for (const [k, v] of Object.entries(extra)) if (v !== undefined && v !== '') (m as unknown as Json)[k] = v;
  return m;
}

export function settings(
  view: RequestView,
  s: { temperature?: unknown; maxTokens?: unknown; topP?: unknown; stream?: unknown; toolChoice?: unknown },
): RequestView {
  const temperature = num(s.temperature);
  const maxTokens = num(s.maxTokens);
  const topP = num(s.topP);
  if (temperature !== undefined) view.temperature = temperature;
  if (maxTokens !== undefined) view.maxTokens = maxTokens;
  if (topP !== undefined) view.topP = topP;
  if (s.stream === true) view.stream = true;
  if (s.toolChoice !== undefined) view.toolChoice = s.toolChoice;
  return view;
}

/** A tool result as the API shows it: isError only on a result the provider marks failed. */
export function resultView(toolUseId: string, result: Pick<TurnResult, 'content' | 'isError'>): ToolResultView {
  return result.isError ? { toolUseId, content: result.content, isError: true } : { toolUseId, content: result.content };
}

export const emptyView = (): RequestView => ({ messages: [], tools: [], historyToolCalls: [], toolResults: [], turns: [] });

export function turn(role: string, content: unknown, calls: TurnCall[] = [], results: TurnResult[] = []): ConversationTurn {
  return { role, text: textOf(content), calls, results };
}
