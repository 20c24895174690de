import { createHash, type Hash } from 'node:crypto';
import type { ConversationTurn, TurnCall } from './requestView.ts';

// Which tool call each tool result in a request answers, read from the conversation the request
// re-sends, as the provider itself reads it: by the call's id where the provider has ids, else by
// position and tool name within the assistant turn the results follow (Ollama, Gemini without
// ids). A call is named by the conversation before the turn that made it (a fingerprint of
// those turns' content) and its place in that turn, so two conversations that make the same
// call side by side stay apart. Pure: turns in, links out.

/** The call a result answers: the turn that made it (by the fingerprint of the turns before it) and its place there. */
export interface AnsweredCall {
  readonly prefix: string;
  readonly index: number;
  readonly name: string;
  readonly providerId: string | null;
}

export interface CarriedResult {
  /** Names this result wherever the conversation is re-sent: the turns before it and its place among its turn's results. */
  readonly key: string;
  readonly providerId: string | null;
  readonly answers: AnsweredCall | null;
  readonly name: string | null;
  readonly content: string;
  readonly isError: boolean;
}

export interface ConversationLinks {
  /** The fingerprint of every turn the request sends: the calls its response makes are named under it. */
  readonly prefix: string;
  readonly results: readonly CarriedResult[];
}

/** Tool arguments compared by meaning: JSON re-serialised, so key order and spacing do not matter. */
function canonicalArguments(text: string): string {
  try {
    return JSON.stringify(sortedKeys(JSON.parse(text)));
  } catch {
    return text;
  }
}

function sortedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedKeys);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((k) => [k, sortedKeys((value as Record<string, unknown>)[k])]),
  );
}

function turnText(turn: ConversationTurn): string {
  return JSON.stringify([
    turn.role,
    turn.text,
    turn.calls.map((c) => [c.name, canonicalArguments(c.arguments)]),
    turn.results.map((r) => [r.name, r.content]),
  ]);
}

interface CallTurn {
  readonly prefix: string;
  readonly calls: readonly TurnCall[];
  readonly answered: boolean[];
}

/** The call a result answers, looked for as the provider does; null when the history holds none. */
function answeredCall(result: { id: string | null; name: string | null }, callTurns: readonly CallTurn[]): AnsweredCall | null {
  const pick = (turn: CallTurn, index: number): AnsweredCall => {
    turn.answered[index] = true;
    const call = turn.calls[index]!;
    return { prefix: turn.prefix, index, name: call.name, providerId: call.id };
  };
  if (result.id !== null) {
    for (let t = callTurns.length - 1; t >= 0; t--) {
      const index = callTurns[t]!.calls.findIndex((c) => c.id === result.id);
      if (index >= 0) return pick(callTurns[t]!, index);
    }
  }
  const last = callTurns.at(-1);
  if (!last) return null;
  const open = (i: number): boolean => !last.answered[i];
  const byName = result.name === null ? -1 : last.calls.findIndex((c, i) => open(i) && c.name === result.name);
  const index = byName >= 0 ? byName : result.name === null && result.id === null ? last.calls.findIndex((_, i) => open(i)) : -1;
  return index >= 0 ? pick(last, index) : null;
}

export function conversationLinks(turns: readonly ConversationTurn[]): ConversationLinks {
  const running: Hash = createHash('sha256');
  const callTurns: CallTurn[] = [];
  const results: CarriedResult[] = [];
  for (const turn of turns) {
    const before = running.copy().digest('hex').slice(0, 32);
    turn.results.forEach((result, index) => {
      results.push({
        key: `${before}:${index}`,
        providerId: result.id,
        answers: answeredCall(result, callTurns),
        name: result.name,
        content: result.content,
        isError: result.isError,
      });
    });
    if (turn.calls.length > 0) callTurns.push({ prefix: before, calls: turn.calls, answered: turn.calls.map(() => false) });
    running.update(turnText(turn)).update('\u0000');
  }
  return { prefix: running.digest('hex').slice(0, 32), results };
}
