import { arr, argsText, isObject, lenientJson, num, obj, str, type Json } from '../json.ts';
import { emptyResponse, errorOf, setUsage, type ModelResponse } from '../modelResponse.ts';
import { emptyView, message, resultView, settings, turn, type RequestView } from '../requestView.ts';
import type { SseEvent } from '../sse.ts';
import type { WireFormat } from './wire.ts';

// Google's Gemini API: generateContent and streamGenerateContent under /v1, /v1beta or /v1alpha,
// with the model named in the path.

function geminiRequest(body: Json): RequestView {
  const view = emptyView();
  const system = body.systemInstruction ?? body.system_instruction;
  if (isObject(system)) {
    view.messages.push(message('system', system.parts));
    view.turns.push(turn('system', system.parts));
  }
  for (const c of arr(body.contents)) {
    if (!isObject(c)) continue;
    const parts = arr(c.parts).filter(isObject);
    const calls = parts.map((p) => p.functionCall).filter(isObject);
    const results = parts.map((p) => p.functionResponse).filter(isObject);
    const turnCalls = calls.map((fc) => ({ id: str(fc.id) ?? null, name: str(fc.name) ?? '', arguments: argsText(fc.args) }));
    const turnResults = results.map((fr) => ({
      id: str(fr.id) ?? null,
      name: str(fr.name) ?? null,
      content: JSON.stringify(fr.response ?? null),
      // The API's own convention: a response's "error" key holds the details of a call that failed.
      isError: isObject(fr.response) && (fr.response.error ?? null) !== null,
    }));
    turnCalls.forEach((fc, i) =>
      view.historyToolCalls.push({ id: fc.id ?? `${fc.name || 'call'}#${i}`, name: fc.name, arguments: fc.arguments }),
    );
    turnResults.forEach((fr, i) => view.toolResults.push(resultView(fr.id ?? `${fr.name ?? 'call'}#${i}`, fr)));
    const role = str(c.role) ?? 'user';
    view.messages.push(message(role, c.parts, { toolCallNames: calls.map((fc) => str(fc.name)).join(',') }));
    view.turns.push(turn(role, c.parts, turnCalls, turnResults));
  }
  for (const group of arr(body.tools)) {
    if (!isObject(group)) continue;
    for (const d of arr(group.functionDeclarations ?? group.function_declarations)) {
      if (isObject(d))
        view.tools.push({ name: str(d.name) ?? '', description: str(d.description), parameters: d.parameters ?? d.parametersJsonSchema });
    }
  }
  const config = isObject(body.generationConfig) ? body.generationConfig : {};
  return settings(view, {
    temperature: config.temperature,
    maxTokens: config.maxOutputTokens,
    topP: config.topP,
    toolChoice: body.toolConfig,
  });
}

function geminiChunk(out: ModelResponse, body: Json): void {
  out.model = str(body.modelVersion) ?? out.model;
  out.messageId = str(body.responseId) ?? out.messageId;
  for (const cand of arr(body.candidates).filter(isObject).slice(0, 1)) {
    for (const part of arr(obj(cand.content).parts).filter(isObject)) {
      if (typeof part.text === 'string') {
        if (part.thought === true) out.thinking += part.text;
        else out.text += part.text;
      }
      const fc = obj(part.functionCall);
      if (str(fc.name)) out.toolCalls.push({ id: str(fc.id) ?? '', name: str(fc.name)!, arguments: argsText(fc.args) });
    }
    out.stopReason = str(cand.finishReason) ?? out.stopReason;
  }
  const u = obj(body.usageMetadata);
  setUsage(out, {
    prompt: num(u.promptTokenCount),
    cached: num(u.cachedContentTokenCount),
    output: num(u.candidatesTokenCount),
    reasoning: num(u.thoughtsTokenCount),
  });
  if (body.error) out.error = errorOf(body);
}

function geminiStream(events: SseEvent[]): ModelResponse {
  const out = emptyResponse(true);
  for (const e of events) geminiChunk(out, obj(lenientJson(e.data)));
  out.complete = out.stopReason !== undefined;
  return out;
}

/** Non-streaming Gemini is one response object (or, from some gateways, an array of chunks). */
function geminiJson(body: unknown): ModelResponse {
  const out = emptyResponse(false);
  for (const chunk of Array.isArray(body) ? body : [body]) geminiChunk(out, obj(chunk));
  return out;
}

export const geminiGenerate: WireFormat = {
  id: 'gemini-generate',
  path: /^\/v1(?:beta|alpha)?\/models\/([^/:]+):(?:generateContent|streamGenerateContent)$/,
  request: geminiRequest,
  response: { stream: geminiStream, json: geminiJson },
};
