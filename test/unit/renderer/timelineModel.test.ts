import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Timeline } from '../../../electron/contract/appContract.ts';
import { laneRange, linkAt, type Plot } from '../../../renderer/views/timeline/timelineLayout.ts';
import {
  buildTimelineModel,
  extentOf,
  isoMillis,
  MAX_HOST_LANES,
  ROW_HEIGHT,
  spanAt,
} from '../../../renderer/views/timeline/timelineModel.ts';

// The Timeline view's model, built from timelines in the window's shape (the contract's Timeline,
// with the subagent tree the timeline route reports): lanes, packed rows, links.

const T0 = Date.parse('2025-03-03T08:00:00.000Z');
const at = (ms: number): string => new Date(T0 + ms).toISOString();
type Agent = Timeline['agents'][number];

function agent(id: string, parent: string | null, fields: Partial<Agent> = {}): Agent {
  return { id, parent, label: id, type: null, spawnTool: null, spawnedAt: null, returnedAt: null, ...fields };
}

function timeline(parts: Partial<Omit<Timeline, 'start' | 'end'>>): Timeline {
  const t: Timeline = {
    start: null,
    end: null,
    agents: [agent('main', null, { label: 'main agent' })],
    turns: [],
    tools: [],
    jobs: [],
    returns: [],
    hosts: [],
    ...parts,
  };
  const spans = [...t.turns, ...t.tools, ...t.jobs, ...t.hosts];
  if (spans.length > 0) {
    t.start = spans.map((s) => s.start).sort()[0]!;
    t.end = spans
      .map((s) => s.end)
      .sort()
      .at(-1)!;
  }
  return t;
}

const turn = (
  agentId: string,
  from: number,
  to: number,
  seq: number,
  fields: Partial<Timeline['turns'][number]> = {},
): Timeline['turns'][number] => ({
  agent: agentId,
  start: at(from),
  end: at(to),
  label: `turn ${seq}`,
  seq,
  open: false,
  error: false,
  resent: false,
  ...fields,
});
const tool = (agentId: string, from: number, to: number, seq: number, open = false): Timeline['tools'][number] => ({
  agent: agentId,
  id: `toolu_${seq}`,
  start: at(from),
  end: at(open ? from : to),
  label: `Bash: step ${seq}`,
  seq,
  open,
});
const hostSpan = (host: string, from: number, seq: number): Timeline['hosts'][number] => ({
  host,
  start: at(from),
  end: at(from + 5),
  label: 'http · 200',
  seq,
  open: false,
});

/** A main agent that spawned two subagents, the first of which spawned one of its own. */
const tree = timeline({
  agents: [
    agent('main', null, { label: 'main agent' }),
    agent('b', 'main', { label: 'Write the tests', type: 'general-purpose', spawnedAt: at(5000), returnedAt: at(9000) }),
    agent('a', 'main', { label: 'Survey the code', type: 'Explore', spawnedAt: at(1000), returnedAt: at(8000) }),
    agent('a2', 'a', { label: 'Read the logs', type: 'Explore', spawnedAt: at(2000), returnedAt: at(3000) }),
  ],
  turns: [
    turn('main', 0, 900, 1),
    turn('a', 1100, 1900, 2),
    turn('a2', 2100, 2900, 3),
    turn('b', 5100, 8900, 4),
    turn('main', 9100, 9500, 5),
  ],
  tools: [tool('main', 900, 8000, 10), tool('main', 900, 9000, 11), tool('a', 1900, 3000, 12)],
  returns: [
    { agent: 'a2', into: 'a', at: at(3000), seq: 20 },
    { agent: 'a', into: 'main', at: at(8000), seq: 21 },
    { agent: 'b', into: 'main', at: at(9000), seq: 22 },
  ],
  hosts: [hostSpan('api.anthropic.com', 0, 30), hostSpan('api.anthropic.com', 1100, 31), hostSpan('github.com', 2000, 32)],
});

describe('the timeline model', () => {
  it('gives each agent a lane, subagents depth first under the agent that spawned them, in spawn order', () => {
    const model = buildTimelineModel(tree);
    const agents = model.lanes.filter((l) => l.kind === 'agent').map((l) => [l.key, l.depth, l.type]);
    expect(agents).toEqual([
      ['agent:main', 0, null],
      ['agent:a', 1, 'Explore'],
      ['agent:a2', 2, 'Explore'],
      ['agent:b', 1, 'general-purpose'],
    ]);
    const b = model.lanes.find((l) => l.key === 'agent:b')!;
    expect(b.life).toEqual({ from: T0 + 5000, to: T0 + 9000 });
  });

  it("puts turns, tools and jobs on their agent's lane, overlapping ones in sub-rows, each row sorted and gap-free of overlaps", () => {
    const model = buildTimelineModel(tree);
    const main = model.lanes.find((l) => l.key === 'agent:main')!;
    const rows = model.rows.slice(main.firstRow, main.firstRow + main.rowCount);
    // Two turns back to back share a row; two tools running at once take two.
    expect(rows.map((r) => [r.kind, r.caption, r.spans.length])).toEqual([
      ['turn', 'turns', 2],
      ['tool', 'tools', 1],
      ['tool', '', 1],
    ]);
    expect(rows.map((r) => r.top)).toEqual([main.top, main.top + ROW_HEIGHT, main.top + 2 * ROW_HEIGHT]);
    Array.from({ length: model.spans.length }, (_, i) => spanAt(model, i)).forEach((span, i) => {
      const row = model.rows[model.spanRow[i]!]!;
      expect(row.spans[model.spanPos[i]!]).toBe(i);
      expect(row.kind).toBe(span.kind);
      const lane = model.lanes[row.lane]!;
      expect(lane.key).toBe(span.kind === 'host' ? `host:${span.owner}` : `agent:${span.owner}`);
    });
  });

  it('draws spawns from the parent to the subagent and returns from the subagent to the agent it reached', () => {
    const model = buildTimelineModel(tree);
    const key = (lane: number) => model.lanes[lane]!.key;
    expect(model.links.map((l) => [l.kind, l.at - T0, key(l.fromLane), key(l.toLane)])).toEqual([
      ['spawn', 1000, 'agent:main', 'agent:a'],
      ['spawn', 2000, 'agent:a', 'agent:a2'],
      ['return', 3000, 'agent:a2', 'agent:a'],
      ['spawn', 5000, 'agent:main', 'agent:b'],
      ['return', 8000, 'agent:a', 'agent:main'],
      ['return', 9000, 'agent:b', 'agent:main'],
    ]);
  });

  it('finds the spawn or return line under the pointer, between the lanes it joins', () => {
    const model = buildTimelineModel(tree);
    const plot: Plot = { from: T0, to: T0 + 10_000, width: 1000, openUntil: T0 + 10_000 };
    const lane = (key: string) => model.lanes.find((l) => l.key === key)!;
    const middle = (key: string) => lane(key).top + ROW_HEIGHT / 2;
    // a returning to main at 8 s: on its line between main's lane and a's, not past either.
    const returned = linkAt(model, plot, 801, (middle('agent:main') + middle('agent:a')) / 2, 4);
    expect(model.links[returned]).toMatchObject({ kind: 'return', at: T0 + 8000 });
    expect(linkAt(model, plot, 801, middle('agent:b') + 10, 4)).toBe(-1);
    expect(linkAt(model, plot, 810, middle('agent:main'), 4)).toBe(-1);
    expect(model.links[linkAt(model, plot, 100, middle('agent:a'), 4)]).toMatchObject({ kind: 'spawn', at: T0 + 1000 });
  });

  it("covers a lane's spans and a subagent's whole life when zooming to a lane", () => {
    const model = buildTimelineModel(tree);
    const index = (key: string) => model.lanes.findIndex((l) => l.key === key);
    // a's own spans run 1.1 s to 3 s; its life, spawn to return, 1 s to 8 s.
    expect(laneRange(model, index('agent:a'), T0)).toEqual({ from: T0 + 1000, to: T0 + 8000 });
    expect(laneRange(model, index('agent:main'), T0)).toEqual({ from: T0, to: T0 + 9500 });
    expect(laneRange(model, index('host:github.com'), T0)).toEqual({ from: T0 + 2000, to: T0 + 2005 });
  });

  it('lists hosts below the agents, busiest first, and groups those past the first twelve', () => {
    const hosts = Array.from({ length: MAX_HOST_LANES + 3 }, (_, h) =>
      Array.from({ length: h + 1 }, (_, k) => hostSpan(`host-${h}.example`, h * 100 + k, h * 100 + k)),
    ).flat();
    const model = buildTimelineModel(timeline({ turns: [turn('main', 0, 10, 1)], hosts }));
    const lanes = model.lanes.filter((l) => l.kind === 'host');
    expect(lanes.map((l) => l.label)).toEqual([
      ...Array.from({ length: MAX_HOST_LANES }, (_, k) => `host-${MAX_HOST_LANES + 2 - k}.example`),
      '3 other hosts',
    ]);
    expect(lanes.at(-1)!.spanCount).toBe(1 + 2 + 3);
    expect(model.hostsTop).toBeLessThan(lanes[0]!.top);
    expect(model.hostsTop).toBeGreaterThan(model.lanes[0]!.top);
  });

  it('keeps a lane for an agent the list does not name, and for one in a loop of parents', () => {
    const model = buildTimelineModel(
      timeline({
        agents: [agent('main', null), agent('x', 'y'), agent('y', 'x')],
        turns: [turn('main', 0, 10, 1), turn('ghost', 20, 30, 2), turn('x', 40, 50, 3)],
      }),
    );
    expect(model.lanes.map((l) => l.key).sort()).toEqual(['agent:ghost', 'agent:main', 'agent:x', 'agent:y']);
    expect(model.lanes[0]!.key).toBe('agent:main');
  });

  it('runs an open span to Infinity, drawn to the time it is asked to end at', () => {
    const model = buildTimelineModel(timeline({ turns: [turn('main', 0, 1000, 1)], tools: [tool('main', 1000, 0, 2, true)] }));
    const open = Array.from({ length: model.spans.length }, (_, i) => spanAt(model, i)).find((s) => s.kind === 'tool')!;
    expect(open.end).toBe(Infinity);
    expect(model.open).toBe(true);
    expect(extentOf(model, T0 + 60_000)).toEqual({ from: T0, to: T0 + 60_000 });
  });

  it('packs any spans into rows that are sorted, whose reach is the running latest end, each span in one row', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 10_000 }), fc.integer({ min: 0, max: 3000 })), { maxLength: 80 }),
        (pairs) => {
          const tools = pairs.map(([from, length], i) => tool('main', from, from + length, i));
          const model = buildTimelineModel(timeline({ turns: [turn('main', 0, 1, 1000)], tools }));
          const toolRows = model.rows.filter((r) => r.kind === 'tool');
          expect(toolRows.reduce((n, r) => n + r.spans.length, 0)).toBe(pairs.length);
          expect(toolRows.length).toBeLessThanOrEqual(6);
          for (const row of toolRows)
            for (let k = 0; k < row.spans.length; k++) {
              if (k > 0) expect(row.starts[k]!).toBeGreaterThanOrEqual(row.starts[k - 1]!);
              expect(row.reach[k]).toBe(Math.max(...row.ends.slice(0, k + 1)));
            }
          // Under the cap, no two spans of a row overlap.
          if (toolRows.length < 6)
            for (const row of toolRows)
              for (let k = 1; k < row.spans.length; k++) expect(row.starts[k]!).toBeGreaterThanOrEqual(row.ends[k - 1]!);
        },
      ),
    );
  });
});

describe('isoMillis', () => {
  it('reads toISOString times as Date.parse does', () => {
    fc.assert(
      fc.property(fc.date({ min: new Date('1000-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59Z'), noInvalidDate: true }), (d) => {
        expect(isoMillis(d.toISOString())).toBe(d.getTime());
      }),
    );
  });

  it('leaves other shapes to Date.parse, and makes 0 of what is not a time', () => {
    expect(isoMillis('2025-03-03T08:00:00Z')).toBe(Date.parse('2025-03-03T08:00:00Z'));
    expect(isoMillis('2025-03-03 08:00:00.000+02:00')).toBe(Date.parse('2025-03-03 08:00:00.000+02:00'));
    expect(isoMillis('2025-0x-03T08:00:00.000Z')).toBe(0);
    expect(isoMillis('0050-01-01T00:00:00.000Z')).toBe(Date.parse('0050-01-01T00:00:00.000Z'));
    expect(isoMillis('not a time')).toBe(0);
  });
});
