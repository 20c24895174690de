// What a model API request asked for, in one shape for every provider: the conversation, the
// declared tools, the tool calls earlier turns made and the tool results sent back, and the
// sampling settings. Pure: a parsed JSON body in, a view out; unknown shapes give empty lists.

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

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const asArray = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const jsonBytes = (v: unknown): number => (v === undefined ? 0 : Buffer.byteLength(JSON.stringify(v)));
const argsText = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v ?? {}));

/** Text of a content value: a string, or the text of its text-like blocks. */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  return asArray(content)
    .map((block) => (isObject(block) ? (str(block.text) ?? (typeof block.content === 'string' ? block.content : undefined)) : str(block)))
    .filter((t): t is string => t !== undefined && t.length > 0)
    .join('\n');
}

function message(role: string, content: unknown, extra: Partial<InferenceMessage> = {}): InferenceMessage {
  const m: InferenceMessage = { role, content: textOf(content), contentBytes: jsonBytes(content) };
  for (const [k, v] of Object.entries(extra)) if (v !== undefined && v !== '') (m as unknown as Json)[k] = v;
  return m;
}

function settings(view: RequestView, s: { temperature?: unknown; maxTokens?: unknown; topP?: unknown; stream?: unknown; toolChoice?: unknown }): RequestView {
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

const empty = (): RequestView => ({ messages: [], tools: [], historyToolCalls: [], toolResults: [], turns: [] });

function turn(role: string, content: unknown, calls: TurnCall[] = [], results: TurnResult[] = []): ConversationTurn {
  return { role, text: textOf(content), calls, results };
}

function anthropic(body: Json): RequestView {
  const view = empty();
  if (body.system !== undefined) {
    view.messages.push(message('system', body.system));
    view.turns.push(turn('system', body.system));
  }
  for (const m of asArray(body.messages)) {
    if (!isObject(m)) continue;
    const blocks = asArray(m.content).filter(isObject);
    const calls = blocks.filter((b) => b.type === 'tool_use');
    const results = blocks.filter((b) => b.type === 'tool_result');
    const turnCalls = calls.map((c) => ({ id: str(c.id) ?? null, name: str(c.name) ?? '', arguments: argsText(c.input) }));
    const turnResults = results.map((r) => ({ id: str(r.tool_use_id) ?? null, name: null, content: textOf(r.content), isError: r.is_error === true }));
    for (const c of turnCalls) view.historyToolCalls.push({ id: c.id ?? '', name: c.name, arguments: c.arguments });
    for (const r of turnResults) view.toolResults.push(r.isError ? { toolUseId: r.id ?? '', content: r.content, isError: true } : { toolUseId: r.id ?? '', content: r.content });
    const ids = [...calls.map((c) => str(c.id)), ...results.map((r) => str(r.tool_use_id))].filter(Boolean).join(',');
    const role = str(m.role) ?? 'user';
    view.messages.push(message(role, m.content, { toolCallNames: calls.map((c) => str(c.name)).join(','), toolUseIds: ids }));
    view.turns.push(turn(role, m.content, turnCalls, turnResults));
  }
  for (const t of asArray(body.tools)) {
    if (isObject(t)) view.tools.push({ name: str(t.name) ?? '', description: str(t.description), parameters: t.input_schema });
  }
  return settings(view, { temperature: body.temperature, maxTokens: body.max_tokens, topP: body.top_p, stream: body.stream, toolChoice: body.tool_choice });
}

/** OpenAI Chat Completions, and Ollama's /api/chat, which shares its message shape. */
function chat(body: Json, options: Json = {}): RequestView {
  const view = empty();
  for (const m of asArray(body.messages)) {
    if (!isObject(m)) continue;
    const role = str(m.role) ?? 'user';
    const calls = asArray(m.tool_calls).filter(isObject);
    const turnCalls = calls.map((c) => {
      const fn = isObject(c.function) ? c.function : {};
      return { id: str(c.id) ?? null, name: str(fn.name) ?? '', arguments: argsText(fn.arguments) };
    });
    turnCalls.forEach((c, i) => view.historyToolCalls.push({ id: c.id ?? `${c.name || 'call'}#${i}`, name: c.name, arguments: c.arguments }));
    const toolUseId = role === 'tool' ? str(m.tool_call_id) : undefined;
    if (role === 'tool') view.toolResults.push({ toolUseId: toolUseId ?? '', content: textOf(m.content) });
    // Ollama's tool messages carry no call id, at most the tool's name (tool_name).
    const results = role === 'tool' ? [{ id: toolUseId ?? null, name: str(m.tool_name) ?? str(m.name) ?? null, content: textOf(m.content), isError: false }] : [];
    view.turns.push(turn(role, role === 'tool' ? '' : m.content, turnCalls, results));
    view.messages.push(message(role, m.content, {
      toolCallNames: calls.map((c) => (isObject(c.function) ? str(c.function.name) : undefined)).join(','),
      toolUseIds: calls.map((c) => str(c.id)).filter(Boolean).join(','),
      toolUseId,
    }));
  }
  for (const t of asArray(body.tools)) {
    if (!isObject(t)) continue;
    const fn = isObject(t.function) ? t.function : t;
    view.tools.push({ name: str(fn.name) ?? '', description: str(fn.description), parameters: fn.parameters });
  }
  return settings(view, {
    temperature: body.temperature ?? options.temperature,
    maxTokens: body.max_completion_tokens ?? body.max_tokens ?? options.num_predict,
    topP: body.top_p ?? options.top_p,
    stream: body.stream,
    toolChoice: body.tool_choice,
  });
}

function responses(body: Json): RequestView {
  const view = empty();
  if (typeof body.instructions === 'string') {
    view.messages.push(message('system', body.instructions));
    view.turns.push(turn('system', body.instructions));
  }
  if (typeof body.input === 'string') {
    view.messages.push(message('user', body.input));
    view.turns.push(turn('user', body.input));
  }
  for (const item of asArray(body.input)) {
    if (!isObject(item)) continue;
    const type = str(item.type) ?? 'message';
    const last = view.turns.at(-1);
    if (type === 'function_call') {
      const call = { id: str(item.call_id) ?? '', name: str(item.name) ?? '', arguments: argsText(item.arguments) };
      view.historyToolCalls.push(call);
      view.messages.push(message('assistant', '', { toolCallNames: call.name, toolUseIds: call.id }));
      // Calls made side by side come as consecutive items: one assistant turn.
      const turnCall = { id: call.id || null, name: call.name, arguments: call.arguments };
      if (last?.role === 'assistant' && last.calls.length > 0 && last.results.length === 0) last.calls.push(turnCall);
      else view.turns.push(turn('assistant', '', [turnCall]));
    } else if (type === 'function_call_output') {
      const id = str(item.call_id) ?? '';
      view.toolResults.push({ toolUseId: id, content: textOf(item.output) });
      view.messages.push(message('tool', item.output, { toolUseIds: id, toolUseId: id }));
      view.turns.push(turn('tool', '', [], [{ id: id || null, name: null, content: textOf(item.output), isError: false }]));
    } else if (type === 'message') {
      view.messages.push(message(str(item.role) ?? 'user', item.content));
      view.turns.push(turn(str(item.role) ?? 'user', item.content));
    }
  }
  for (const t of asArray(body.tools)) {
    if (isObject(t)) view.tools.push({ name: str(t.name) ?? str(t.type) ?? '', description: str(t.description), parameters: t.parameters });
  }
  return settings(view, { temperature: body.temperature, maxTokens: body.max_output_tokens, topP: body.top_p, stream: body.stream, toolChoice: body.tool_choice });
}

function gemini(body: Json): RequestView {
  const view = empty();
  const system = body.systemInstruction ?? body.system_instruction;
  if (isObject(system)) {
    view.messages.push(message('system', system.parts));
    view.turns.push(turn('system', system.parts));
  }
  for (const c of asArray(body.contents)) {
    if (!isObject(c)) continue;
    const parts = asArray(c.parts).filter(isObject);
    const calls = parts.map((p) => p.functionCall).filter(isObject);
    const results = parts.map((p) => p.functionResponse).filter(isObject);
    const turnCalls = calls.map((fc) => ({ id: str(fc.id) ?? null, name: str(fc.name) ?? '', arguments: argsText(fc.args) }));
    const turnResults = results.map((fr) => ({ id: str(fr.id) ?? null, name: str(fr.name) ?? null, content: JSON.stringify(fr.response ?? null), isError: false }));
    turnCalls.forEach((fc, i) => view.historyToolCalls.push({ id: fc.id ?? `${fc.name || 'call'}#${i}`, name: fc.name, arguments: fc.arguments }));
    turnResults.forEach((fr, i) => view.toolResults.push({ toolUseId: fr.id ?? `${fr.name ?? 'call'}#${i}`, content: fr.content }));
    const role = str(c.role) ?? 'user';
    view.messages.push(message(role, c.parts, { toolCallNames: calls.map((fc) => str(fc.name)).join(',') }));
    view.turns.push(turn(role, c.parts, turnCalls, turnResults));
  }
  for (const group of asArray(body.tools)) {
    if (!isObject(group)) continue;
    for (const d of asArray(group.functionDeclarations ?? group.function_declarations)) {
      if (isObject(d)) view.tools.push({ name: str(d.name) ?? '', description: str(d.description), parameters: d.parameters ?? d.parametersJsonSchema });
    }
  }
  const config = isObject(body.generationConfig) ? body.generationConfig : {};
  return settings(view, { temperature: config.temperature, maxTokens: config.maxOutputTokens, topP: config.topP, toolChoice: body.toolConfig });
}

/** The request view for a provider and API path; an unknown shape gives an empty view. */
export function requestView(provider: string, path: string, body: unknown): RequestView {
  if (!isObject(body)) return empty();
  switch (provider) {
    case 'anthropic':
      return anthropic(body);
    case 'openai':
      return path.includes('/responses') ? responses(body) : chat(body);
    case 'google':
      return gemini(body);
    case 'ollama':
      return path.endsWith('/generate')
        ? settings({ ...empty(), messages: [...(typeof body.system === 'string' ? [message('system', body.system)] : []), message('user', body.prompt)], turns: [turn('user', body.prompt)] }, { stream: body.stream !== false })
        : chat({ ...body, stream: body.stream !== false }, isObject(body.options) ? body.options : {});
    default:
      return chat(body);
  }
}
