import type { Timeline } from '../../../electron/contract/appContract.ts';
import type { TimeRange } from './viewport.ts';

// The session's timeline arranged for drawing, once per fetch: a lane per agent (the subagent tree
// under its parent, depth first), its turns, tools and jobs packed into sub-rows so none hides
// another, then a lane per host (busiest first, the rest sharing one). Each row keeps its spans
// sorted by start in typed arrays, with the running maximum of their ends, so the drawing and
// the pointer find what is on screen by binary search whatever the zoom.

export type SpanKind = 'turn' | 'tool' | 'job' | 'host';

export interface ModelSpan {
  readonly kind: SpanKind;
  readonly label: string;
  readonly seq: number | null;
  readonly start: number;
  /** Infinity while the span is open: it runs on until now. */
  readonly end: number;
  /** The agent a turn, tool or job belongs to; the host a host span went to. */
  readonly owner: string;
  readonly error: boolean;
  readonly resent: boolean;
}

export interface Row {
  readonly lane: number;
  readonly kind: SpanKind;
  /** What the row holds, beside the lane's name: turns, tools, jobs (empty for a host's second rows). */
  readonly caption: string;
  /** Top edge in the lanes' own pixels, from the top of the first lane. */
  readonly top: number;
  readonly starts: Float64Array;
  readonly ends: Float64Array;
  /** reach[i]: the latest end among spans 0..i; never decreases, so a window's first span is a binary search away. */
  readonly reach: Float64Array;
  /** Index into TimelineModel.spans of each span in the row. */
  readonly spans: Int32Array;
  /** failed[i]: how many of spans 0..i-1 failed, so a merged bar knows in O(1) whether it hides a failure. */
  readonly failed: Int32Array;
}

export interface Lane {
  readonly key: string;
  readonly kind: 'agent' | 'host';
  readonly label: string;
  /** A subagent's type (Explore, general-purpose, …). */
  readonly type: string | null;
  /** 0 for the main agent and hosts, 1 for what it spawned, and so on. */
  readonly depth: number;
  readonly spanCount: number;
  readonly firstRow: number;
  readonly rowCount: number;
  readonly top: number;
  readonly height: number;
  /** A subagent's life, from its spawn to its return (either may be unknown). */
  readonly life: { readonly from: number | null; readonly to: number | null } | null;
}

/** A subagent being spawned by its parent, or its result reaching another agent. */
export interface Link {
  readonly kind: 'spawn' | 'return';
  readonly at: number;
  readonly fromLane: number;
  readonly toLane: number;
  readonly seq: number | null;
  readonly label: string;
}

export interface TimelineModel {
  /** First and last recorded instants (open spans aside). */
  readonly start: number;
  readonly end: number;
  /** Some span is still open (a call in flight). */
  readonly open: boolean;
  readonly spans: readonly ModelSpan[];
  /** The row and the position in it of each span. */
  readonly spanRow: Int32Array;
  readonly spanPos: Int32Array;
  readonly lanes: readonly Lane[];
  readonly rows: readonly Row[];
  readonly links: readonly Link[];
  /** Top of the hosts' section header, or null when there are no hosts. */
  readonly hostsTop: number | null;
  readonly height: number;
}

export const ROW_HEIGHT = 16;
export const BAR_HEIGHT = 12;
const LANE_GAP = 6;
export const SECTION_HEIGHT = 20;
/** Busy sessions have more hosts than fit: the busiest get lanes, the rest share one. */
export const MAX_HOST_LANES = 12;
/** Sub-rows a kind may take in one lane; spans past them overlap in the last (its bars merge). */
const MAX_AGENT_SUBROWS = 6;
const MAX_HOST_SUBROWS = 3;

const MAIN = 'main';

/** The decimal number in s[from, to), or NaN when a character there is not a digit. */
function digits(s: string, from: number, to: number): number {
  let n = 0;
  for (let i = from; i < to; i++) {
    const d = s.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return NaN;
    n = n * 10 + d;
  }
  return n;
}

/**
 * Epoch milliseconds of an ISO time. The timeline's times are all toISOString's shape
 * (2025-03-03T08:00:00.000Z), read here digit by digit: Date.parse on the 60,000 of a long
 * session took a large share of the first paint. Any other shape goes to Date.parse.
 */
export function isoMillis(iso: string): number {
  if (iso.length === 24 && iso.charCodeAt(10) === 84 /* T */ && iso.charCodeAt(19) === 46 /* . */ && iso.charCodeAt(23) === 90 /* Z */) {
    const year = digits(iso, 0, 4);
    // Date.UTC reads years 0-99 as 1900-1999.
    const t =
      year >= 100
        ? Date.UTC(
            year,
            digits(iso, 5, 7) - 1,
            digits(iso, 8, 10),
            digits(iso, 11, 13),
            digits(iso, 14, 16),
            digits(iso, 17, 19),
            digits(iso, 20, 23),
          )
        : NaN;
    if (!Number.isNaN(t)) return t;
  }
  const t = Date.parse(iso);
  return Number.isNaN(t) ? 0 : t;
}

function span(
  kind: SpanKind,
  s: Pick<Timeline['hosts'][number], 'start' | 'end' | 'label' | 'seq' | 'open'>,
  owner: string,
  error: boolean,
  resent: boolean,
): ModelSpan {
  const start = isoMillis(s.start);
  const end = s.open ? Infinity : Math.max(start, isoMillis(s.end));
  return { kind, label: s.label, seq: s.seq, start, end, owner, error, resent };
}

/** Spans as the model holds them: epoch milliseconds, open ones ending at Infinity. */
function modelSpans(timeline: Timeline): ModelSpan[] {
  const spans: ModelSpan[] = [];
  for (const s of timeline.turns) spans.push(span('turn', s, s.agent, s.error, s.resent));
  for (const s of timeline.tools) spans.push(span('tool', s, s.agent, false, false));
  for (const s of timeline.jobs) spans.push(span('job', s, s.agent, false, false));
  for (const s of timeline.hosts) spans.push(span('host', s, s.host, false, false));
  return spans;
}

type Agent = Timeline['agents'][number];

/** The agents depth first from main, each parent's children in the order they were spawned. */
function agentTree(agents: readonly Agent[], spans: readonly ModelSpan[]): { agent: Agent; depth: number }[] {
  const byId = new Map<string, Agent>();
  for (const a of agents) if (!byId.has(a.id)) byId.set(a.id, a);
  if (!byId.has(MAIN))
    byId.set(MAIN, { id: MAIN, parent: null, label: 'main agent', type: null, spawnTool: null, spawnedAt: null, returnedAt: null });
  const firstSeen = new Map<string, number>();
  for (const s of spans) {
    if (s.kind === 'host') continue;
    // A span of an agent the list does not name still gets a lane (under main), never vanishes.
    if (!byId.has(s.owner))
      byId.set(s.owner, { id: s.owner, parent: MAIN, label: s.owner, type: null, spawnTool: null, spawnedAt: null, returnedAt: null });
    firstSeen.set(s.owner, Math.min(firstSeen.get(s.owner) ?? Infinity, s.start));
  }
  const children = new Map<string | null, Agent[]>();
  for (const a of byId.values()) {
    const parent = a.parent !== null && byId.has(a.parent) && a.id !== MAIN ? a.parent : null;
    const list = children.get(parent);
    if (list) list.push(a);
    else children.set(parent, [a]);
  }
  const born = (a: Agent): number => (a.spawnedAt ? isoMillis(a.spawnedAt) : (firstSeen.get(a.id) ?? Infinity));
  const order = (list: Agent[]): Agent[] =>
    [...list].sort((a, b) => (a.id === MAIN ? -1 : b.id === MAIN ? 1 : born(a) - born(b) || a.label.localeCompare(b.label)));
  const out: { agent: Agent; depth: number }[] = [];
  const seen = new Set<string>();
  const visit = (a: Agent, depth: number): void => {
    if (seen.has(a.id)) return;
    seen.add(a.id);
    out.push({ agent: a, depth });
    for (const child of order(children.get(a.id) ?? [])) visit(child, depth + 1);
  };
  for (const root of order(children.get(null) ?? [])) visit(root, 0);
  // Agents only reachable through a loop of parents still get their lane.
  for (const a of byId.values()) visit(a, 0);
  return out;
}

/**
 * Packs spans (indices, sorted by start) into at most `cap` sub-rows, each span into the first row
 * free at its start; past the cap a span goes where the least overlaps it (the last row to free).
 */
function pack(order: readonly number[], spans: readonly ModelSpan[], cap: number): number[][] {
  const rows: number[][] = [];
  const free: number[] = [];
  for (const i of order) {
    const s = spans[i]!;
    let target = free.findIndex((at) => at <= s.start);
    if (target < 0 && rows.length < cap) {
      target = rows.length;
      rows.push([]);
      free.push(-Infinity);
    }
    if (target < 0) target = free.indexOf(Math.min(...free));
    rows[target]!.push(i);
    free[target] = Math.max(free[target]!, s.end);
  }
  return rows;
}

const byStart = (spans: readonly ModelSpan[]) => (a: number, b: number) =>
  spans[a]!.start - spans[b]!.start || spans[a]!.end - spans[b]!.end;

export function buildTimelineModel(timeline: Timeline): TimelineModel {
  const spans = modelSpans(timeline);
  const spanRow = new Int32Array(spans.length).fill(-1);
  const spanPos = new Int32Array(spans.length).fill(-1);
  const lanes: Lane[] = [];
  const rows: Row[] = [];
  let y = 0;

  const addLane = (
    lane: Omit<Lane, 'firstRow' | 'rowCount' | 'top' | 'height' | 'spanCount'>,
    groups: { kind: SpanKind; caption: string; members: number[]; cap: number }[],
  ): void => {
    const index = lanes.length;
    const top = y;
    const firstRow = rows.length;
    let spanCount = 0;
    for (const group of groups) {
      if (group.members.length === 0) continue;
      spanCount += group.members.length;
      const packed = pack(group.members.sort(byStart(spans)), spans, group.cap);
      packed.forEach((members, sub) => {
        const starts = new Float64Array(members.length);
        const ends = new Float64Array(members.length);
        const reach = new Float64Array(members.length);
        const failed = new Int32Array(members.length + 1);
        let latest = -Infinity;
        members.forEach((s, pos) => {
          starts[pos] = spans[s]!.start;
          ends[pos] = spans[s]!.end;
          latest = Math.max(latest, spans[s]!.end);
          reach[pos] = latest;
          failed[pos + 1] = failed[pos]! + (spans[s]!.error ? 1 : 0);
          spanRow[s] = rows.length;
          spanPos[s] = pos;
        });
        const caption = sub === 0 ? group.caption : '';
        rows.push({ lane: index, kind: group.kind, caption, top: y, starts, ends, reach, spans: Int32Array.from(members), failed });
        y += ROW_HEIGHT;
      });
    }
    // A lane with nothing in it (a subagent whose spans were cut off) keeps one empty row.
    if (rows.length === firstRow) {
      const none = new Float64Array();
      const kind = groups[0]?.kind ?? 'turn';
      rows.push({
        lane: index,
        kind,
        caption: '',
        top: y,
        starts: none,
        ends: none,
        reach: none,
        spans: new Int32Array(),
        failed: new Int32Array(1),
      });
      y += ROW_HEIGHT;
    }
    lanes.push({ ...lane, spanCount, firstRow, rowCount: rows.length - firstRow, top, height: y - top });
    y += LANE_GAP;
  };

  const byOwner = new Map<string, number[]>();
  spans.forEach((s, i) => {
    const key = `${s.kind}\u0000${s.owner}`;
    const list = byOwner.get(key);
    if (list) list.push(i);
    else byOwner.set(key, [i]);
  });
  const owned = (kind: SpanKind, owner: string): number[] => byOwner.get(`${kind}\u0000${owner}`) ?? [];

  const laneOfAgent = new Map<string, number>();
  for (const { agent, depth } of agentTree(timeline.agents, spans)) {
    laneOfAgent.set(agent.id, lanes.length);
    const life =
      agent.spawnedAt || agent.returnedAt
        ? { from: agent.spawnedAt ? isoMillis(agent.spawnedAt) : null, to: agent.returnedAt ? isoMillis(agent.returnedAt) : null }
        : null;
    addLane({ key: `agent:${agent.id}`, kind: 'agent', label: agent.label, type: agent.type, depth, life }, [
      { kind: 'turn', caption: 'turns', members: owned('turn', agent.id), cap: MAX_AGENT_SUBROWS },
      { kind: 'tool', caption: 'tools', members: owned('tool', agent.id), cap: MAX_AGENT_SUBROWS },
      { kind: 'job', caption: 'jobs', members: owned('job', agent.id), cap: MAX_AGENT_SUBROWS },
    ]);
  }

  const hostCounts = new Map<string, number>();
  for (const s of spans) if (s.kind === 'host') hostCounts.set(s.owner, (hostCounts.get(s.owner) ?? 0) + 1);
  const hosts = [...hostCounts.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).map(([host]) => host);
  let hostsTop: number | null = null;
  if (hosts.length > 0) {
    hostsTop = y;
    y += SECTION_HEIGHT;
  }
  for (const host of hosts.slice(0, MAX_HOST_LANES))
    addLane({ key: `host:${host}`, kind: 'host', label: host, type: null, depth: 0, life: null }, [
      { kind: 'host', caption: '', members: owned('host', host), cap: MAX_HOST_SUBROWS },
    ]);
  const rest = hosts.slice(MAX_HOST_LANES);
  if (rest.length > 0)
    addLane({ key: 'hosts:rest', kind: 'host', label: `${rest.length} other hosts`, type: null, depth: 0, life: null }, [
      { kind: 'host', caption: '', members: rest.flatMap((host) => owned('host', host)), cap: MAX_HOST_SUBROWS },
    ]);

  const links: Link[] = [];
  for (const agent of timeline.agents) {
    const from = agent.parent !== null ? laneOfAgent.get(agent.parent) : undefined;
    const to = laneOfAgent.get(agent.id);
    if (from !== undefined && to !== undefined && agent.spawnedAt)
      links.push({ kind: 'spawn', at: isoMillis(agent.spawnedAt), fromLane: from, toLane: to, seq: null, label: `spawned ${agent.label}` });
  }
  for (const r of timeline.returns) {
    const from = laneOfAgent.get(r.agent);
    const to = laneOfAgent.get(r.into);
    if (from !== undefined && to !== undefined)
      links.push({
        kind: 'return',
        at: isoMillis(r.at),
        fromLane: from,
        toLane: to,
        seq: r.seq,
        label: `${lanes[from]!.label} returned to ${lanes[to]!.label}`,
      });
  }
  links.sort((a, b) => a.at - b.at);

  const start = timeline.start ? isoMillis(timeline.start) : spans.reduce((m, s) => Math.min(m, s.start), Infinity);
  const lastEnd = spans.reduce((m, s) => Math.max(m, s.end === Infinity ? s.start : s.end), -Infinity);
  const end = Math.max(timeline.end ? isoMillis(timeline.end) : lastEnd, lastEnd);
  return {
    start: Number.isFinite(start) ? start : 0,
    end: Number.isFinite(end) ? end : 0,
    open: spans.some((s) => s.end === Infinity),
    spans,
    spanRow,
    spanPos,
    lanes,
    rows,
    links,
    hostsTop,
    height: Math.max(0, y - LANE_GAP),
  };
}

/** Where a span ends on screen: an open one at `openUntil` (now, for a live session). */
export const endOf = (span: ModelSpan, openUntil: number): number => Math.min(span.end, Math.max(openUntil, span.start));

/** The recorded extent of the session, open spans running to `openUntil`. */
export function extentOf(model: TimelineModel, openUntil: number): TimeRange {
  return { from: model.start, to: model.open ? Math.max(model.end, openUntil) : model.end };
}
