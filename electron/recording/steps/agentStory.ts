import {
  AGENT_ID_HEADER,
  agentIdOf,
  backgroundJobOf,
  PARENT_AGENT_ID_HEADER,
  returnMarkersOf,
  sideCallOf,
  spawnedAgentOf,
  spawnRequestOf,
} from '../../telemetry/claudeCode.ts';
import type { RowOf } from '../../store/sessionSchema.ts';
import type { StoryMemory } from '../storyMemory.ts';
import type { ModelCallReading } from './exchangeFacts.ts';
import { writesTo, type ExchangeStep } from './step.ts';

// What the session's story (the timeline: agents, turns, tools, jobs, returns) needs of an
// exchange, read once while it is recorded so no reader parses a body again: the Claude Code agent
// that sent it, from its agent-id headers, on every exchange; and of a model call, what its bodies
// tell (story_marks) and whether it is a side call, with the fingerprint of its conversation that
// tells a retry. An agent re-sends its whole conversation each time: only what is new to that
// agent is marked, so a mark is where a fact first reached it.

/** Who a row of facts is remembered under: the agent's id, '' for the main conversation. */
function agentKey(agentId: string | undefined, headerSent: boolean): string {
  return agentId ?? (headerSent ? '\u0000unusable' : '');
}

type Mark = Omit<RowOf<'story_marks'>, 'net_event_id'>;

function marksOf(call: ModelCallReading, agent: string, memory: StoryMemory): Mark[] {
  const marks: Mark[] = [];
  for (const { result, call: answered } of call.carried) {
    const callId = answered?.callId ?? result.providerId;
    if (callId === null || !memory.firstCarry(agent, callId)) continue;
    marks.push({ kind: 'result', call_id: callId });
    const job = backgroundJobOf(result.content);
    if (job !== undefined) marks.push({ kind: 'job', call_id: callId, ref: job });
    const spawned = memory.isSpawn(callId) ? spawnedAgentOf(result.content) : undefined;
    if (spawned !== undefined) marks.push({ kind: 'spawned', call_id: callId, ref: spawned });
  }
  // Claude Code delivers a notification as a user message when its agent is idle, and appended to
  // the next tool result while a tool round is in flight; it also merges consecutive user messages
  // when it re-sends them, so the text around a marker changes between requests. A marker is known
  // by what it says and how many times this request said it before, never by the text around it.
  const occurrences = new Map<string, number>();
  for (const turn of call.request.turns) {
    if (turn.role !== 'user') continue;
    for (const text of [turn.text, ...turn.results.map((r) => r.content)]) {
      for (const marker of returnMarkersOf(text)) {
        const what =
          marker.kind === 'agent-message'
            ? `message\u0000${marker.from}`
            : `notification\u0000${marker.taskId}\u0000${marker.toolUseId ?? ''}\u0000${marker.status ?? ''}`;
        const nth = (occurrences.get(what) ?? 0) + 1;
        occurrences.set(what, nth);
        if (!memory.firstMarker(agent, `${what}\u0000${nth}`)) continue;
        if (marker.kind === 'agent-message') marks.push({ kind: 'agent-message', ref: marker.from });
        else marks.push({ kind: 'notification', ref: marker.taskId, call_id: marker.toolUseId ?? null, label: marker.status });
      }
    }
  }
  for (const tool of call.toolCalls) {
    const spawn = tool.id === '' ? undefined : spawnRequestOf(tool.name, tool.arguments);
    if (spawn === undefined) continue;
    memory.rememberSpawn(tool.id);
    marks.push({ kind: 'spawn', call_id: tool.id, ref: spawn.type ?? null, label: spawn.description ?? null });
  }
  return marks;
}

export const agentStory: ExchangeStep = {
  name: 'agent-story',
  handles: 'exchange',
  reads: "the request's Claude Code agent-id headers; of a model call, its conversation and answer as model-calls read them",
  writes: ['net_events', 'story_marks'],
  description:
    'Records what the session story reads: the Claude Code agent that sent the request, and of a model call its side-call kind, its conversation fingerprint, the tool results its agent sent back first, background commands, subagents started and named, and task notifications and agent messages new to the agent',
  capabilities: ['headers.read', 'body.read'],
  actions: ['observe'],
  readsBody: true,
  config: writesTo(['net_events', 'story_marks']),
  record: (facts, state) => {
    const headers = facts.ex.requestHeaders ?? {};
    const agentId = agentIdOf(headers[AGENT_ID_HEADER]);
    const parentAgentId = agentIdOf(headers[PARENT_AGENT_ID_HEADER]);
    const who = { agent_id: agentId ?? null, parent_agent_id: parentAgentId ?? null };
    const call = facts.modelCall;
    if (call === null) return { columns: who };
    const lastMessage = call.request.messages.findLast((m) => m.role !== 'system');
    const side = sideCallOf(lastMessage?.content ?? '') ?? (call.request.tools.length === 0 ? 'tool-less' : null);
    const marks = marksOf(call, agentKey(agentId, headers[AGENT_ID_HEADER] !== undefined), state.story);
    return {
      columns: { ...who, side_call: side, conversation_hash: call.links.prefix },
      rows:
        marks.length === 0
          ? undefined
          : (eventId, sink) => {
              for (const mark of marks) sink.append('story_marks', { ...mark, net_event_id: eventId });
            },
    };
  },
};
