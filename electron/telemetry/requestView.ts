// What a model API request asked for, in one shape for every provider: the conversation, the
// declared tools, the tool calls earlier turns made and the tool results sent back, and the
// sampling settings. Pure: a parsed JSON body in, a view out; unknown shapes give empty lists.

import type { DeclaredTool, InferenceMessage, ToolCallView, ToolResultView } from '../contract/sessionEvent.ts';

export interface RequestView {
  messages: InferenceMessage[];
  tools: DeclaredTool[];
  historyToolCalls: ToolCallView[];
  toolResults: ToolResultView[];
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

const empty = (): RequestView => ({ messages: [], tools: [], historyToolCalls: [], toolResults: [] });

function anthropic(body: Json): RequestView {
  const view = empty();
  if (body.system !== undefined) view.messages.push(message('system', body.system));
  for (const m of asArray(body.messages)) {
    if (!isObject(m)) continue;
    const blocks = asArray(m.content).filter(isObject);
    const calls = blocks.filter((b) => b.type === 'tool_use');
    const results = blocks.filter((b) => b.type === 'tool_result');
    for (const c of calls) view.historyToolCalls.push({ id: str(c.id) ?? '', name: str(c.name) ?? '', arguments: argsText(c.input) });
    for (const r of results) {
      const result: ToolResultView = { toolUseId: str(r.tool_use_id) ?? '', content: textOf(r.content) };
      if (r.is_error === true) result.isError = true;
      view.toolResults.push(result);
    }
    const ids = [...calls.map((c) => str(c.id)), ...results.map((r) => str(r.tool_use_id))].filter(Boolean).join(',');
    view.messages.push(message(str(m.role) ?? 'user', m.content, { toolCallNames: calls.map((c) => str(c.name)).join(','), toolUseIds: ids }));
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
    calls.forEach((c, i) => {
      const fn = isObject(c.function) ? c.function : {};
      view.historyToolCalls.push({ id: str(c.id) ?? `${str(fn.name) ?? 'call'}#${i}`, name: str(fn.name) ?? '', arguments: argsText(fn.arguments) });
    });
    const toolUseId = role === 'tool' ? str(m.tool_call_id) : undefined;
    if (role === 'tool') view.toolResults.push({ toolUseId: toolUseId ?? '', content: textOf(m.content) });
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
  if (typeof body.instructions === 'string') view.messages.push(message('system', body.instructions));
  if (typeof body.input === 'string') view.messages.push(message('user', body.input));
  for (const item of asArray(body.input)) {
    if (!isObject(item)) continue;
    const type = str(item.type) ?? 'message';
    if (type === 'function_call') {
      const call = { id: str(item.call_id) ?? '', name: str(item.name) ?? '', arguments: argsText(item.arguments) };
      view.historyToolCalls.push(call);
      view.messages.push(message('assistant', '', { toolCallNames: call.name, toolUseIds: call.id }));
    } else if (type === 'function_call_output') {
      const id = str(item.call_id) ?? '';
      view.toolResults.push({ toolUseId: id, content: textOf(item.output) });
      view.messages.push(message('tool', item.output, { toolUseIds: id, toolUseId: id }));
    } else if (type === 'message') {
      view.messages.push(message(str(item.role) ?? 'user', item.content));
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
  if (isObject(system)) view.messages.push(message('system', system.parts));
  for (const c of asArray(body.contents)) {
    if (!isObject(c)) continue;
    const parts = asArray(c.parts).filter(isObject);
    const calls = parts.map((p) => p.functionCall).filter(isObject);
    const results = parts.map((p) => p.functionResponse).filter(isObject);
    calls.forEach((fc, i) => view.historyToolCalls.push({ id: str(fc.id) ?? `${str(fc.name) ?? 'call'}#${i}`, name: str(fc.name) ?? '', arguments: argsText(fc.args) }));
    results.forEach((fr, i) => view.toolResults.push({ toolUseId: str(fr.id) ?? `${str(fr.name) ?? 'call'}#${i}`, content: JSON.stringify(fr.response ?? null) }));
    view.messages.push(message(str(c.role) ?? 'user', c.parts, { toolCallNames: calls.map((fc) => str(fc.name)).join(',') }));
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
        ? settings({ ...empty(), messages: [...(typeof body.system === 'string' ? [message('system', body.system)] : []), message('user', body.prompt)] }, { stream: body.stream !== false })
        : chat({ ...body, stream: body.stream !== false }, isObject(body.options) ? body.options : {});
    default:
      return chat(body);
  }
}
