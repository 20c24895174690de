import type { Agent, Turn } from './timeline.ts';

// The order the Conversation view tells a session in: the main agent's turns by seq, and under the
// turn whose tool call spawned a subagent (the agent's spawnTool), that subagent's turns, one level
// deeper, before the spawning agent's next turn. Pure: the timeline's agents and turns in, rows out.

export interface OrderedTurn {
  /** The turn's seq, as the timeline gives it (its exchange's request event). */
  readonly seq: number;
  readonly agent: string;
  /** 0 for the top-level agents, one more for each subagent between the turn and them. */
  readonly depth: number;
  /** The id of the tool call that spawned the turn's agent; null at the top level. */
  readonly under: string | null;
}

type TurnRef = Pick<Turn, 'seq' | 'agent'>;
type AgentRef = Pick<Agent, 'id' | 'parent' | 'spawnTool'>;

interface Placement {
  readonly agent: string;
  readonly tool: string | null;
  readonly first: number;
}

/**
 * `emitterOf` gives the seq of the turn whose response asked for a tool call. A subagent whose
 * spawning call is not among the turns (the timeline was cut, the call was not recorded) goes
 * under its parent's last turn before its own first, or to the top level when there is none; so
 * does one whose placement would make it its own ancestor. Every turn appears exactly once.
 */
export function conversationOrder(
  agents: readonly AgentRef[],
  turns: readonly TurnRef[],
  emitterOf: (toolCallId: string) => number | undefined,
): OrderedTurn[] {
  const byAgent = new Map<string, number[]>();
  for (const t of [...turns].sort((a, b) => a.seq - b.seq)) {
    const own = byAgent.get(t.agent);
    if (own) own.push(t.seq);
    else byAgent.set(t.agent, [t.seq]);
  }
  const agentOfTurn = new Map(turns.map((t) => [t.seq, t.agent]));
  const known = new Map(agents.map((a) => [a.id, a]));

  /** The turn an agent's turns hang under, or undefined at the top level. */
  const hostOf = (agent: AgentRef, first: number): number | undefined => {
    if (agent.parent === undefined) return undefined;
    const spawner = agent.spawnTool === undefined ? undefined : emitterOf(agent.spawnTool);
    if (spawner !== undefined && agentOfTurn.has(spawner) && agentOfTurn.get(spawner) !== agent.id) return spawner;
    return byAgent.get(agent.parent)?.findLast((seq) => seq < first);
  };

  // An agent placed under one of its own descendants would be reached from nowhere: walk up from
  // each host and put the agent at the top level if the walk comes back to it (one agent per loop
  // moves, so the others stay where they belong).
  const placed = new Map<string, number | undefined>();
  for (const [id, seqs] of byAgent) placed.set(id, hostOf(known.get(id) ?? { id }, seqs[0]!));
  for (const [id, host] of placed) {
    const seen = new Set([id]);
    let at = host === undefined ? undefined : agentOfTurn.get(host);
    while (at !== undefined && !seen.has(at)) {
      seen.add(at);
      const up = placed.get(at);
      at = up === undefined ? undefined : agentOfTurn.get(up);
    }
    if (at === id) placed.set(id, undefined);
  }

  const children = new Map<number, Placement[]>();
  const top: { seq: number; agent: string }[] = [];
  for (const [id, seqs] of byAgent) {
    const host = placed.get(id);
    if (host === undefined) {
      for (const seq of seqs) top.push({ seq, agent: id });
      continue;
    }
    const list = children.get(host) ?? [];
    list.push({ agent: id, tool: known.get(id)?.spawnTool ?? null, first: seqs[0]! });
    children.set(host, list);
  }
  for (const list of children.values()) list.sort((a, b) => a.first - b.first);
  top.sort((a, b) => a.seq - b.seq);

  const out: OrderedTurn[] = [];
  // Depth first without recursion: a stack of turns still to write, the next one on top.
  const stack: OrderedTurn[] = top.map((t) => ({ seq: t.seq, agent: t.agent, depth: 0, under: null })).reverse();
  while (stack.length > 0) {
    const turn = stack.pop()!;
    out.push(turn);
    const nested = (children.get(turn.seq) ?? []).flatMap((c) =>
      byAgent.get(c.agent)!.map((seq) => ({ seq, agent: c.agent, depth: turn.depth + 1, under: c.tool })),
    );
    for (let i = nested.length - 1; i >= 0; i--) stack.push(nested[i]!);
  }
  return out;
}
