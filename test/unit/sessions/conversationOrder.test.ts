import { describe, expect, it } from 'vitest';
import { conversationOrder } from '../../../electron/sessions/conversationOrder.ts';
import type { Timeline } from '../../../electron/sessions/timeline.ts';

// The Conversation's order on timeline values as the agent rules give them: subagents under the
// call that spawned them, one level per generation, and every turn exactly once whatever the
// agents claim.

const at = (s: number): string => new Date(Date.UTC(2026, 2, 1, 10, 0, s)).toISOString();
const turn = (seq: number, agent: string): Timeline['turns'][number] => ({ agent, seq, start: at(seq) });

/** main asks for two Task calls (seq 1 and 21); a1 runs under the first and spawns a2; b1 runs under the second. */
const timeline: Pick<Timeline, 'agents' | 'turns'> = {
  agents: [
    { id: 'main', label: 'main agent' },
    { id: 'a1', parent: 'main', label: 'Explore', spawnTool: 'toolu_a1' },
    { id: 'a2', parent: 'a1', label: 'general-purpose', spawnTool: 'toolu_a2' },
    { id: 'b1', parent: 'main', label: 'Plan', spawnTool: 'toolu_b1' },
  ],
  turns: [
    turn(1, 'main'),
    turn(3, 'a1'),
    turn(5, 'a2'),
    turn(7, 'a1'),
    turn(9, 'a2'),
    turn(11, 'a1'),
    turn(13, 'b1'),
    turn(15, 'main'),
    turn(17, 'b1'),
    turn(19, 'main'),
  ],
};
const emitters = new Map([
  ['toolu_a1', 1],
  ['toolu_a2', 3],
  ['toolu_b1', 1],
]);

const rows = (order: ReturnType<typeof conversationOrder>) =>
  order.map((t) => `${'  '.repeat(t.depth)}${t.agent}@${t.seq}${t.under ? ` <${t.under}` : ''}`);

describe('conversationOrder', () => {
  it('puts each subagent under its spawning call, in the order they started, each generation one level deeper', () => {
    expect(rows(conversationOrder(timeline.agents, timeline.turns, (id) => emitters.get(id)))).toEqual([
      'main@1',
      '  a1@3 <toolu_a1',
      '    a2@5 <toolu_a2',
      '    a2@9 <toolu_a2',
      '  a1@7 <toolu_a1',
      '  a1@11 <toolu_a1',
      '  b1@13 <toolu_b1',
      '  b1@17 <toolu_b1',
      'main@15',
      'main@19',
    ]);
  });

  it("puts a subagent whose spawning call is unknown under its parent's last turn before it started", () => {
    const order = conversationOrder(timeline.agents, timeline.turns, (id) => (id === 'toolu_b1' ? undefined : emitters.get(id)));
    expect(rows(order).slice(0, 8)).toContain('  b1@13 <toolu_b1');
    expect(rows(order).indexOf('  b1@13 <toolu_b1')).toBe(rows(order).indexOf('  a1@11 <toolu_a1') + 1);
  });

  it('keeps agents that claim each other as spawners at the top level rather than losing their turns', () => {
    const looped = [
      { id: 'main', label: 'main' },
      { id: 'x', parent: 'y', label: 'x', spawnTool: 'toolu_y' },
      { id: 'y', parent: 'x', label: 'y', spawnTool: 'toolu_x' },
    ];
    const turns = [turn(1, 'main'), turn(3, 'x'), turn(5, 'y'), turn(7, 'unknown-agent')];
    const order = conversationOrder(looped, turns, (id) => (id === 'toolu_x' ? 3 : id === 'toolu_y' ? 5 : undefined));
    expect(order.map((t) => t.seq).sort((a, b) => a - b)).toEqual([1, 3, 5, 7]);
    expect(order.filter((t) => t.depth === 0).map((t) => t.agent)).toContain('main');
    expect(order.find((t) => t.agent === 'unknown-agent')).toMatchObject({ depth: 0, under: null });
  });

  it('is the seq order when every turn is the main agent', () => {
    const flat = [turn(9, 'main'), turn(1, 'main'), turn(5, 'main')];
    expect(conversationOrder(timeline.agents.slice(0, 1), flat, () => undefined).map((t) => [t.seq, t.depth])).toEqual([
      [1, 0],
      [5, 0],
      [9, 0],
    ]);
  });
});
