import type { Timeline } from '../../../electron/contract/appContract.ts';
import type { TimeRange } from './viewport.ts';

// The session's timeline arranged for drawing, once per fetch: a lane per agent (the subagent tree
// under its parent, depth first), its turns, tools and jobs packed into sub-rows so none hides
// another, then a lane per host (busiest first, the rest sharing one). Each row keeps its spans
// sorted by start in typed arrays, with the running maximum of their ends, so the drawing and
// the pointer find what is on screen by binary search whatever the zoom.

export type SpanKind = 'turn' | 'tool' | 'job' | 'host';
/** A span's kind by its code in SpanTable.kinds. */
export const SPAN_KINDS: readonly SpanKind[] = ['turn', 'tool', 'job', 'host'];

type WireTurn = Timeline['turns'][number];
type WireSpan = WireTurn | Timeline['tools'][number] | Timeline['jobs'][number] | Timeline['hosts'][number];

/**
 * Every span of the session by index, in columns: what the drawing reads for each span (kind,
 * times, owner) in typed arrays, and the span as the API sent it for what words say about it.
 * Columns, not an object per span: the first paint of a long session waits on this.
 */
export interface SpanTable {
  readonly length: number;
  /** Index into SPAN_KINDS. */
  readonly kinds: Uint8Array;
  readonly starts: Float64Array;
  /** Infinity while the span is open: it runs on until now. */
  readonly ends: Float64Array;
  /** The agent a turn, tool or job belongs to; the host a host span went to. */
  readonly owners: readonly string[];
  /** 1 for a turn that failed. */
  readonly failed: Uint8Array;
  readonly wire: readonly WireSpan[];
}

/** One span, in words and times, for the hover, the selection and the keys. */
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
  /** How many of the spans are turns (model calls). */
  readonly turns: number;
  readonly spans: SpanTable;
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
const HOST = SPAN_KINDS.indexOf('host');

/** The two-digit number at s[i], or NaN when either character is not a digit. */
function two(s: string, i: number): number {
  const a = s.charCodeAt(i) - 48;
  const b = s.charCodeAt(i + 1) - 48;
  return a >= 0 && a <= 9 && b >= 0 && b <= 9 ? a * 10 + b : NaN;
}

/** The last calendar day read, as its text up to the T and its epoch milliseconds: a session's times share a few days. */
let dayText = '';
let dayMillis = 0;

/**
 * Epoch milliseconds of an ISO time. The timeline's times are all toISOString's shape
 * (2025-03-03T08:00:00.000Z), read here digit by digit, the day once for the run of times on
 * it: Date.parse on the 60,000 of a long session took a large share of its first paint. Any
 * other shape goes to Date.parse.
 */
export function isoMillis(iso: string): number {
  if (iso.length === 24 && iso.charCodeAt(10) === 84 /* T */ && iso.charCodeAt(19) === 46 /* . */ && iso.charCodeAt(23) === 90 /* Z */) {
    if (dayText === '' || !iso.startsWith(dayText)) {
      const year = two(iso, 0) * 100 + two(iso, 2);
      // Date.UTC reads years 0-99 as 1900-1999.
      dayMillis = year >= 100 ? Date.UTC(year, two(iso, 5) - 1, two(iso, 8)) : NaN;
      dayText = Number.isNaN(dayMillis) ? '' : iso.slice(0, 11);
    }
    const third = iso.charCodeAt(22) - 48;
    const time = ((two(iso, 11) * 60 + two(iso, 14)) * 60 + two(iso, 17)) * 1000 + two(iso, 20) * 10 + third;
    if (dayText !== '' && third >= 0 && third <= 9 && !Number.isNaN(time)) return dayMillis + time;
  }
  const t = Date.parse(iso);
  return Number.isNaN(t) ? 0 : t;
}

/** The spans in columns: epoch milliseconds, open ones ending at Infinity. */
function spanTable(timeline: Timeline): SpanTable {
  const length = timeline.turns.length + timeline.tools.length + timeline.jobs.length + timeline.hosts.length;
  const kinds = new Uint8Array(length);
  const starts = new Float64Array(length);
  const ends = new Float64Array(length);
  const owners: string[] = new Array<string>(length);
  const failed = new Uint8Array(length);
  const wire: WireSpan[] = new Array<WireSpan>(length);
  let i = 0;
  const add = (kind: number, list: readonly WireSpan[], owner: (s: WireSpan) => string): void => {
    for (const s of list) {
      const start = isoMillis(s.start);
      kinds[i] = kind;
      starts[i] = start;
      ends[i] = s.open ? Infinity : Math.max(start, isoMillis(s.end));
      owners[i] = owner(s);
      failed[i] = (s as Partial<WireTurn>).error === true ? 1 : 0;
      wire[i] = s;
      i += 1;
    }
  };
  const agentOf = (s: WireSpan): string => (s as WireTurn).agent;
  add(SPAN_KINDS.indexOf('turn'), timeline.turns, agentOf);
  add(SPAN_KINDS.indexOf('tool'), timeline.tools, agentOf);
  add(SPAN_KINDS.indexOf('job'), timeline.jobs, agentOf);
  add(HOST, timeline.hosts, (s) => (s as Timeline['hosts'][number]).host);
  return { length, kinds, starts, ends, owners, failed, wire };
}

/** Span `index` of the model, whole. */
export function spanAt(model: TimelineModel, index: number): ModelSpan {
  const { spans } = model;
  const wire = spans.wire[index]!;
  const turn = 'error' in wire ? wire : null;
  return {
    kind: SPAN_KINDS[spans.kinds[index]!]!,
    label: wire.label,
    seq: wire.seq,
    start: spans.starts[index]!,
    end: spans.ends[index]!,
    owner: spans.owners[index]!,
    error: turn?.error ?? false,
    resent: turn?.resent ?? false,
  };
}

type Agent = Timeline['agents'][number];

/** The agents depth first from main, each parent's children in the order they were spawned. */
function agentTree(agents: readonly Agent[], spans: SpanTable): { agent: Agent; depth: number }[] {
  const byId = new Map<string, Agent>();
  for (const a of agents) if (!byId.has(a.id)) byId.set(a.id, a);
  if (!byId.has(MAIN))
    byId.set(MAIN, { id: MAIN, parent: null, label: 'main agent', type: null, spawnTool: null, spawnedAt: null, returnedAt: null });
  const firstSeen = new Map<string, number>();
  for (let i = 0; i < spans.length; i++) {
    if (spans.kinds[i] === HOST) continue;
    const owner = spans.owners[i]!;
    const seen = firstSeen.get(owner);
    if (seen !== undefined) {
      if (spans.starts[i]! < seen) firstSeen.set(owner, spans.starts[i]!);
      continue;
    }
    firstSeen.set(owner, spans.starts[i]!);
    // A span of an agent the list does not name still gets a lane (under main), never vanishes.
    if (!byId.has(owner))
      byId.set(owner, { id: owner, parent: MAIN, label: owner, type: null, spawnTool: null, spawnedAt: null, returnedAt: null });
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
function pack(order: readonly number[], spans: SpanTable, cap: number): number[][] {
  const rows: number[][] = [];
  const free: number[] = [];
  for (const i of order) {
    const start = spans.starts[i]!;
    let target = -1;
    for (let r = 0; r < free.length && target < 0; r++) if (free[r]! <= start) target = r;
    if (target < 0 && rows.length < cap) {
      target = rows.length;
      rows.push([]);
      free.push(-Infinity);
    }
    if (target < 0) {
      target = 0;
      for (let r = 1; r < free.length; r++) if (free[r]! < free[target]!) target = r;
    }
    rows[target]!.push(i);
    if (spans.ends[i]! > free[target]!) free[target] = spans.ends[i]!;
  }
  return rows;
}

/** Span indices in order of start (then end). The API lists spans nearly in time order, so most are already sorted: checked first. */
function sortByStart(members: number[], spans: SpanTable): number[] {
  const { starts, ends } = spans;
  const before = (a: number, b: number): number => starts[a]! - starts[b]! || ends[a]! - ends[b]!;
  for (let k = 1; k < members.length; k++) if (before(members[k - 1]!, members[k]!) > 0) return members.sort(before);
  return members;
}

export function buildTimelineModel(timeline: Timeline): TimelineModel {
  const spans = spanTable(timeline);
  const spanRow = new Int32Array(spans.length).fill(-1);
  const spanPos = new Int32Array(spans.length).fill(-1);
  const lanes: Lane[] = [];
  const rows: Row[] = [];
  let y = 0;
  // Every row's columns are views into these, filled row after row: a session of a thousand
  // subagents has thousands of rows, and an array each was most of the model's cost.
  const starts = new Float64Array(spans.length);
  const ends = new Float64Array(spans.length);
  const reach = new Float64Array(spans.length);
  const members = new Int32Array(spans.length);
  /** failed[k]: failed turns among the first k spans laid out; a row's differences count its own. */
  const failed = new Int32Array(spans.length + 1);
  let filled = 0;

  const addRow = (lane: number, kind: SpanKind, caption: string, order: readonly number[]): void => {
    const from = filled;
    let latest = -Infinity;
    for (let pos = 0; pos < order.length; pos++) {
      const i = order[pos]!;
      const end = spans.ends[i]!;
      starts[filled] = spans.starts[i]!;
      ends[filled] = end;
      if (end > latest) latest = end;
      reach[filled] = latest;
      members[filled] = i;
      failed[filled + 1] = failed[filled]! + spans.failed[i]!;
      spanRow[i] = rows.length;
      spanPos[i] = pos;
      filled += 1;
    }
    rows.push({
      lane,
      kind,
      caption,
      top: y,
      starts: starts.subarray(from, filled),
      ends: ends.subarray(from, filled),
      reach: reach.subarray(from, filled),
      spans: members.subarray(from, filled),
      failed: failed.subarray(from, filled + 1),
    });
    y += ROW_HEIGHT;
  };

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
      pack(sortByStart(group.members, spans), spans, group.cap).forEach((row, sub) =>
        addRow(index, group.kind, sub === 0 ? group.caption : '', row),
      );
    }
    // A lane with nothing in it (a subagent whose spans were cut off) keeps one empty row.
    if (rows.length === firstRow) addRow(index, groups[0]?.kind ?? 'turn', '', []);
    lanes.push({ ...lane, spanCount, firstRow, rowCount: rows.length - firstRow, top, height: y - top });
    y += LANE_GAP;
  };

  // By kind, then owner: the spans of a kind come in a run, so each run reads one map.
  const byOwner: Map<string, number[]>[] = SPAN_KINDS.map(() => new Map());
  for (let i = 0; i < spans.length; i++) {
    const owners = byOwner[spans.kinds[i]!]!;
    const owner = spans.owners[i]!;
    const list = owners.get(owner);
    if (list) list.push(i);
    else owners.set(owner, [i]);
  }
  const owned = (kind: SpanKind, owner: string): number[] => byOwner[SPAN_KINDS.indexOf(kind)]!.get(owner) ?? [];

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

  const hosts = [...byOwner[HOST]!.entries()].sort((a, b) => b[1].length - a[1].length || a[0].localeCompare(b[0])).map(([host]) => host);
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

  let first = Infinity;
  let lastEnd = -Infinity;
  let open = false;
  for (let i = 0; i < spans.length; i++) {
    const end = spans.ends[i]!;
    if (spans.starts[i]! < first) first = spans.starts[i]!;
    if (end === Infinity) open = true;
    else if (end > lastEnd) lastEnd = end;
  }
  const start = timeline.start ? isoMillis(timeline.start) : first;
  const end = Math.max(timeline.end ? isoMillis(timeline.end) : lastEnd, lastEnd);
  return {
    start: Number.isFinite(start) ? start : 0,
    end: Number.isFinite(end) ? end : 0,
    open,
    turns: timeline.turns.length,
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

/** Where a span ends on screen: a closed one at its end, an open one at `openUntil` (now, for a live session), never before it starts. */
export const visibleEnd = (start: number, end: number, openUntil: number): number => (end === Infinity ? Math.max(openUntil, start) : end);

export const endOf = (span: Pick<ModelSpan, 'start' | 'end'>, openUntil: number): number => visibleEnd(span.start, span.end, openUntil);

/** The recorded extent of the session, open spans running to `openUntil`. */
export function extentOf(model: TimelineModel, openUntil: number): TimeRange {
  return { from: model.start, to: model.open ? Math.max(model.end, openUntil) : model.end };
}
