import { HANDBACK_TOOL } from '../telemetry/claudeCode.ts';
import type { Agent, HostSpan, JobSpan, ReturnMark, Span, Timeline, ToolSpan, Turn } from './timeline.ts';

// The rules of the session's story (spec: GET /v1/sessions/{id}/timeline), over the facts the
// recorder kept: each exchange with the agent and client that sent it, each model call's answer,
// each tool call, and the story marks its bodies held. Pure: rows in, spans out, nothing parsed.
//
// Turns and tools belong to a known client's agents: Claude Code's tree (main, each subagent by its
// agent-id header, `subagents` for requests recorded before ids were), one `main` for any other
// known client; an unknown client's requests are host rows only. Only Claude Code gets subagents,
// jobs and returns.

const MAIN = 'main';
/** The agent of Claude Code requests recorded before agent ids were captured (their header is there, its value was not kept). */
const UNCAPTURED = 'subagents';
const CLAUDE_CODE = 'claude-code';

/** One exchange (a net_events row) as the story reads it. */
export interface ExchangeFact {
  /** The wire seq that anchors its spans: its request event. */
  readonly seq: number;
  readonly eventId: string;
  readonly at: string;
  /** `at` in milliseconds. */
  readonly t: number;
  readonly ms: number;
  /** When its response ended: `at` and its duration. */
  readonly end: string;
  readonly host: string;
  readonly kind: HostSpan['kind'];
  readonly status?: number;
  readonly denied: boolean;
  readonly errorKind?: string;
  /** The upstream's response headers arrived: the dial succeeded. */
  readonly reached: boolean;
  /** The canonical name of the known coding agent that sent it (claude-code, codex, …); undefined for any other client. */
  readonly client?: string;
  readonly agentId?: string;
  readonly parentAgentId?: string;
  /** The request carried Claude Code's agent-id header, whether or not its value was kept. */
  readonly agentHeader: boolean;
  /** Set on a model API request: what its call answered and what its request was. */
  readonly call?: ModelCallFact;
}

export interface ModelCallFact {
  /** model_calls.id; undefined when nothing came back to make a call of. */
  readonly row?: number;
  readonly model?: string;
  readonly finish?: string;
  readonly side?: string;
  readonly conversation?: string;
}

export interface ToolFact {
  readonly seq: number;
  readonly callId: string;
  readonly name: string;
  readonly preview?: string;
  /** The model call whose response asked for it; undefined for an MCP call. */
  readonly modelCallRow?: number;
  /** An MCP call's own exchange, which ran it from its start for its duration. */
  readonly exchangeEventId?: string;
  readonly at: string;
  /** An MCP call's end: its exchange's. */
  readonly end?: string;
}

export interface MarkFact {
  readonly eventId: string;
  readonly kind: string;
  readonly callId?: string;
  readonly ref?: string;
  readonly label?: string;
}

export interface TimelineInput {
  readonly sessionId: string;
  readonly lastSeq: number;
  readonly truncated: boolean;
  /** True once the session has ended: a span with no end then provably stopped. */
  readonly ended: boolean;
  readonly exchanges: readonly ExchangeFact[];
  readonly tools: readonly ToolFact[];
  readonly marks: readonly MarkFact[];
  /**
   * Where each tool result was first carried, by call id: the exchange's event id. For a file
   * recorded before story marks were, whose `result` marks are missing; else empty.
   */
  readonly firstResults: ReadonlyMap<string, string>;
}

const ms = (iso: string): number => Date.parse(iso);

/** Finish reasons that say the call failed. */
const FAILED_FINISH = new Set(['refusal', 'content_filter', 'failed', 'cancelled']);
/** Ways an exchange fails to reach its upstream at all: the dial did not succeed. */
const DIAL_FAILED = new Set(['upstream_dns', 'upstream_refused', 'upstream_timeout', 'upstream_tls', 'upstream_error', 'dial_failed']);

interface Request {
  readonly ex: ExchangeFact;
  readonly agent: string;
  readonly claude: boolean;
  /** A turn of its agent: a side call (progress label, away recap, Claude Code's tool-less one-shots) is none. */
  readonly kept: boolean;
  readonly ok: boolean;
}

function agentOfRequest(ex: ExchangeFact): string {
  if (ex.client !== CLAUDE_CODE) return MAIN;
  return ex.agentId ?? (ex.agentHeader ? UNCAPTURED : MAIN);
}

function failed(ex: ExchangeFact): boolean {
  const call = ex.call!;
  if (call.row === undefined || ex.errorKind !== undefined) return true;
  if (ex.status !== undefined && ex.status >= 400) return true;
  return call.finish === undefined || FAILED_FINISH.has(call.finish);
}

function listIn<T>(map: Map<string, T[]>, key: string): T[] {
  let list = map.get(key);
  if (!list) map.set(key, (list = []));
  return list;
}

/** The first index in a sorted list of times at or after `t`. */
function firstAtOrAfter(times: readonly number[], t: number): number {
  let lo = 0;
  let hi = times.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (times[mid]! < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

class Story {
  /** The MCP exchanges, whose calls are their agent's tools. */
  readonly mcpExchanges = new Map<string, ExchangeFact>();
  readonly requests = new Map<string, Request>();
  readonly byCallRow = new Map<number, Request>();
  readonly agents = new Map<string, Agent>([[MAIN, { id: MAIN, label: 'main agent' }]]);
  /** Each agent's first request, for a fork's spawn. */
  readonly firstSeen = new Map<string, number>();
  readonly lastCall = new Map<string, number>();
  /** Successful turns' start times by agent, sorted: what says an agent recovered from a failed dial. */
  readonly goodTurns = new Map<string, number[]>();
  /** Failed dials to a model host, by time. */
  readonly dialFailures: number[] = [];

  constructor(readonly input: TimelineInput) {
    for (const ex of input.exchanges) {
      if (ex.kind === 'llm' && !ex.reached && ex.errorKind !== undefined && DIAL_FAILED.has(ex.errorKind)) this.dialFailures.push(ex.t);
      if (ex.kind === 'mcp') this.mcpExchanges.set(ex.eventId, ex);
      if (!ex.call || ex.client === undefined) continue;
      const claude = ex.client === CLAUDE_CODE;
      const side = ex.call.side;
      const kept = side !== 'progress-label' && side !== 'away-recap' && !(claude && side === 'tool-less');
      const request: Request = { ex, agent: agentOfRequest(ex), claude, kept, ok: !failed(ex) };
      this.requests.set(ex.eventId, request);
      if (ex.call.row !== undefined) this.byCallRow.set(ex.call.row, request);
      const t = ex.t;
      if (!this.firstSeen.has(request.agent)) this.firstSeen.set(request.agent, t);
      this.lastCall.set(request.agent, Math.max(this.lastCall.get(request.agent) ?? -Infinity, t));
      if (kept && request.ok) listIn(this.goodTurns, request.agent).push(t);
    }
    this.dialFailures.sort((a, b) => a - b);
    for (const times of this.goodTurns.values()) times.sort((a, b) => a - b);
  }

  private children: Map<string, string[]> | null = null;
  private readonly subtrees = new Map<string, string[]>();

  /** The agent and the agents below it (asked once the tree is whole). */
  subtree(agent: string): string[] {
    let out = this.subtrees.get(agent);
    if (out) return out;
    if (!this.children) {
      this.children = new Map();
      for (const a of this.agents.values()) if (a.parent !== undefined) listIn(this.children, a.parent).push(a.id);
    }
    out = [agent];
    const seen = new Set(out);
    for (let i = 0; i < out.length; i++)
      for (const child of this.children.get(out[i]!) ?? [])
        if (!seen.has(child)) {
          seen.add(child);
          out.push(child);
        }
    this.subtrees.set(agent, out);
    return out;
  }

  /** The first failed dial after `from`. */
  dialAfter(from: number): number | undefined {
    return this.dialFailures[firstAtOrAfter(this.dialFailures, from + 1)];
  }

  /** The first failed dial in (from, to) that `agent` and the agents below it did not recover from before `to`. */
  cutOffBetween(agent: string, from: number, to: number): number | undefined {
    for (let i = firstAtOrAfter(this.dialFailures, from + 1); i < this.dialFailures.length; i++) {
      const dial = this.dialFailures[i]!;
      if (dial >= to) return undefined;
      const recovered = this.subtree(agent).some((a) => {
        const turns = this.goodTurns.get(a) ?? [];
        const next = turns[firstAtOrAfter(turns, dial + 1)];
        return next !== undefined && next < to;
      });
      if (!recovered) return dial;
    }
    return undefined;
  }
}

function turnsOf(story: Story): Turn[] {
  const previous = new Map<string, string | undefined>();
  const turns: Turn[] = [];
  for (const request of story.requests.values()) {
    if (!request.kept) continue;
    const { ex, agent } = request;
    const call = ex.call!;
    const conversation = call.conversation;
    const resent = conversation !== undefined && previous.get(agent) === conversation;
    previous.set(agent, conversation);
    const turn: Turn = { agent, start: ex.at, end: ex.end, seq: ex.seq };
    if (call.finish !== undefined) turn.finish = call.finish;
    if (call.model !== undefined) turn.model = call.model;
    if (!request.ok) turn.error = true;
    if (resent) turn.resent = true;
    turns.push(turn);
  }
  return turns;
}

interface Marks {
  /** Per agent and call: the first request of that agent carrying the call's result. */
  readonly results: Map<string, Request>;
  readonly jobs: { request: Request; callId: string; id: string }[];
  readonly spawns: Map<string, { request: Request; type?: string; label?: string }>;
  readonly spawned: Map<string, string>;
  readonly notifications: { request: Request; ref: string; callId?: string }[];
  readonly messages: { request: Request; ref: string }[];
}

function readMarks(story: Story): Marks {
  const marks: Marks = { results: new Map(), jobs: [], spawns: new Map(), spawned: new Map(), notifications: [], messages: [] };
  for (const mark of story.input.marks) {
    const request = story.requests.get(mark.eventId);
    if (!request) continue;
    if (mark.kind === 'result' && mark.callId !== undefined) {
      const key = `${request.agent}\u0000${mark.callId}`;
      if (!marks.results.has(key)) marks.results.set(key, request);
    }
    // What follows is Claude Code's alone: its subagents, jobs and returns.
    if (!request.claude) continue;
    if (mark.kind === 'job' && mark.callId !== undefined && mark.ref !== undefined)
      marks.jobs.push({ request, callId: mark.callId, id: mark.ref });
    else if (mark.kind === 'spawn' && mark.callId !== undefined)
      marks.spawns.set(mark.callId, { request, type: mark.ref, label: mark.label });
    else if (mark.kind === 'spawned' && mark.callId !== undefined && mark.ref !== undefined) marks.spawned.set(mark.ref, mark.callId);
    else if (mark.kind === 'notification' && mark.ref !== undefined)
      marks.notifications.push({ request, ref: mark.ref, callId: mark.callId });
    else if (mark.kind === 'agent-message' && mark.ref !== undefined) marks.messages.push({ request, ref: mark.ref });
  }
  return marks;
}

/** The agents: main, each Claude Code subagent by its id, linked to the Agent call that started it. */
function buildAgents(story: Story, marks: Marks): Map<string, string> {
  const { agents } = story;
  const ensure = (id: string, parent: string): void => {
    if (!agents.has(id)) agents.set(id, { id, parent, label: id === UNCAPTURED ? 'subagents' : id });
  };
  for (const request of story.requests.values()) {
    if (!request.claude || request.agent === MAIN) continue;
    const parent =
      request.agent === UNCAPTURED ? MAIN : ((request.ex.agentId !== undefined ? request.ex.parentAgentId : undefined) ?? MAIN);
    if (parent !== MAIN) ensure(parent, MAIN);
    const known = agents.get(request.agent);
    if (known && known.parent === MAIN && parent !== MAIN && known.id !== parent) known.parent = parent;
    ensure(request.agent, parent);
  }
  // An agent an Agent call's result names, or the notification of its end names with that call,
  // is linked to that call; its requests may be out of view.
  const named = new Map(marks.spawned);
  for (const n of marks.notifications)
    if (n.callId !== undefined && marks.spawns.has(n.callId) && !named.has(n.ref)) named.set(n.ref, n.callId);
  const spawnOf = new Map<string, string>();
  for (const [agentId, callId] of named) {
    const spawn = marks.spawns.get(callId);
    if (!spawn) continue;
    ensure(agentId, spawn.request.agent);
    spawnOf.set(agentId, callId);
  }
  // A fork names no id: it takes its parent's earliest spawn no agent has claimed.
  const claimed = new Set(spawnOf.values());
  const unclaimed = new Map<string, { callId: string; at: number }[]>();
  for (const [callId, s] of marks.spawns) if (!claimed.has(callId)) listIn(unclaimed, s.request.agent).push({ callId, at: s.request.ex.t });
  for (const list of unclaimed.values()) list.sort((a, b) => a.at - b.at);
  const waiting = [...agents.values()]
    .filter((a) => a.id !== MAIN && a.id !== UNCAPTURED && !spawnOf.has(a.id))
    .sort((a, b) => (story.firstSeen.get(a.id) ?? Infinity) - (story.firstSeen.get(b.id) ?? Infinity));
  for (const agent of waiting) {
    const spawns = unclaimed.get(agent.parent ?? MAIN) ?? [];
    const first = story.firstSeen.get(agent.id) ?? Infinity;
    if (spawns.length === 0 || spawns[0]!.at > first) continue;
    spawnOf.set(agent.id, spawns.shift()!.callId);
  }
  for (const [agentId, callId] of spawnOf) {
    const agent = agents.get(agentId)!;
    const spawn = marks.spawns.get(callId)!;
    agent.parent = spawn.request.agent;
    agent.spawnTool = callId;
    agent.spawnedAt = spawn.request.ex.end;
    if (spawn.label !== undefined) agent.label = spawn.label;
    if (spawn.type !== undefined) agent.type = spawn.type;
  }
  // Headers are the client's to send: an agent that names, through its parents, itself is hung under main.
  for (const agent of agents.values()) {
    const above = new Set([agent.id]);
    for (let up = agent.parent; up !== undefined && up !== MAIN; up = agents.get(up)?.parent) {
      if (!above.has(up)) above.add(up);
      else {
        agent.parent = MAIN;
        break;
      }
    }
  }
  return spawnOf;
}

/** A model's tool call on the clock, in milliseconds: from the response that asked for it to the request that carried its result. */
type ToolTimes = Map<ToolSpan, { readonly from: number; readonly to: number }>;

function toolsOf(story: Story, marks: Marks, times: ToolTimes): ToolSpan[] {
  const { input } = story;
  const tools: ToolSpan[] = [];
  for (const fact of input.tools) {
    const mcp = fact.modelCallRow === undefined;
    const request = mcp ? story.requests.get(fact.exchangeEventId ?? '') : story.byCallRow.get(fact.modelCallRow!);
    // An MCP call by a known client's agent is that agent's, through its own exchange.
    const mcpExchange = mcp ? story.mcpExchanges.get(fact.exchangeEventId ?? '') : undefined;
    const agent = request?.agent ?? (mcpExchange?.client !== undefined ? agentOfRequest(mcpExchange) : undefined);
    if (agent === undefined || (request !== undefined && !request.kept)) continue;
    const start = mcp ? fact.at : request!.ex.end;
    const span: ToolSpan = { agent, id: fact.callId, name: fact.name, start, seq: fact.seq };
    if (fact.preview !== undefined) span.preview = fact.preview;
    const carried =
      marks.results.get(`${agent}\u0000${fact.callId}`)?.ex ??
      (input.firstResults.size > 0 ? story.requests.get(input.firstResults.get(fact.callId) ?? '')?.ex : undefined);
    const answered = mcp ? fact.end : carried?.at;
    // A result recorded before its call (a tool started mid-stream) is clamped to the start.
    if (answered !== undefined) span.end = answered < start ? start : answered;
    if (!mcp) times.set(span, { from: request!.ex.t + request!.ex.ms, to: carried?.t ?? Infinity });
    tools.push(span);
  }
  return tools;
}

/**
 * Ends a tool at a failed dial to a model host between its start and its result that neither its
 * agent nor one below it recovered from: the agent tried to report back and the network was gone.
 * A tool already lost ended where it started.
 */
function cutOff(story: Story, times: ToolTimes): void {
  for (const [tool, { from, to }] of times) {
    if (tool.lost) continue;
    const cut = story.cutOffBetween(tool.agent, from, to);
    if (cut !== undefined) tool.end = new Date(cut).toISOString();
  }
}

/** Ends where it started a tool that never got an answer but provably stopped. */
function loseUnanswered(story: Story, marks: Marks, tools: ToolSpan[]): void {
  const lose = (t: ToolSpan): void => {
    t.end = t.start;
    t.lost = true;
  };
  const turnsBy = new Map<string, number[]>();
  for (const r of story.requests.values()) if (r.kept) listIn(turnsBy, r.agent).push(r.ex.t);
  for (const times of turnsBy.values()) times.sort((a, b) => a - b);
  const stops = new Map<string, number>();
  const stop = (agent: string, at: number): void => {
    stops.set(agent, Math.min(stops.get(agent) ?? Infinity, at));
  };
  // A handback ends its agent's run; a task notification naming an agent says its run ended.
  for (const t of tools) if (t.name === HANDBACK_TOOL && t.end === undefined) stop(t.agent, ms(t.start));
  for (const n of marks.notifications) if (story.agents.has(n.ref)) stop(n.ref, n.request.ex.t);
  for (const t of tools) {
    if (t.end !== undefined) continue;
    const start = ms(t.start);
    const stoppedAt = stops.get(t.agent);
    const turns = turnsBy.get(t.agent) ?? [];
    const movedOn = turns[firstAtOrAfter(turns, start + 1)] !== undefined;
    if (story.input.ended || movedOn || (stoppedAt !== undefined && stoppedAt >= start)) lose(t);
  }
}

function jobsOf(story: Story, marks: Marks, toolById: ReadonlyMap<string, ToolSpan>): JobSpan[] {
  const notified = new Map<string, Request>();
  for (const n of marks.notifications) {
    const seen = notified.get(n.ref);
    if (!seen || n.request.ex.t < seen.ex.t) notified.set(n.ref, n.request);
  }
  return marks.jobs.map(({ request, callId, id }) => {
    const job: JobSpan = { agent: request.agent, id, start: request.ex.at, seq: request.ex.seq };
    // The tool ends at the acknowledgement: the job is what shows the command still running.
    const tool = toolById.get(callId);
    if (tool && tool.agent === request.agent) {
      tool.end = tool.start > request.ex.at ? tool.start : request.ex.at;
      delete tool.lost;
    }
    const end = notified.get(id);
    if (end && end.ex.t >= request.ex.t) job.end = end.ex.at;
    else {
      const cut = story.dialAfter(story.lastCall.get(request.agent) ?? request.ex.t);
      if (cut !== undefined) job.end = new Date(cut).toISOString();
    }
    return job;
  });
}

function returnsOf(story: Story, marks: Marks, spawnOf: Map<string, string>, toolById: ReadonlyMap<string, ToolSpan>): ReturnMark[] {
  const returns: ReturnMark[] = [];
  // A hand-back message and the notification of the same end, in one request, are one return.
  const seen = new Set<string>();
  for (const { request, ref } of [...marks.notifications, ...marks.messages]) {
    const key = `${ref}\u0000${request.ex.eventId}`;
    if (!story.agents.has(ref) || ref === MAIN || ref === request.agent || seen.has(key)) continue;
    seen.add(key);
    returns.push({ agent: ref, into: request.agent, at: request.ex.at, seq: request.ex.seq });
  }
  returns.sort((a, b) => ms(a.at) - ms(b.at) || a.seq - b.seq);
  const firstBack = new Map<string, string>();
  for (const r of returns) if (!firstBack.has(r.agent)) firstBack.set(r.agent, r.at);
  for (const agent of story.agents.values()) {
    const back = firstBack.get(agent.id);
    if (back !== undefined) agent.returnedAt = back;
    else {
      // A subagent run in the foreground returns with its Agent call's result, after its last request.
      const spawn = toolById.get(spawnOf.get(agent.id) ?? '');
      const last = story.lastCall.get(agent.id);
      if (spawn?.end !== undefined && !spawn.lost && (last === undefined || last <= ms(spawn.end))) agent.returnedAt = spawn.end;
    }
  }
  return returns;
}

/**
 * Every exchange as a host row. The recorder writes an exchange's row once the exchange has ended,
 * so none is still in flight, and none has to age out: one that ended with no answer (the client
 * gave up, the connection broke before a status) provably stopped, and ends where it started.
 */
function hostsOf(input: TimelineInput): HostSpan[] {
  return input.exchanges.map((ex) => {
    const span: HostSpan = { host: ex.host, kind: ex.kind, start: ex.at, seq: ex.seq, end: ex.status === undefined ? ex.at : ex.end };
    if (ex.status !== undefined) span.status = ex.status;
    if (ex.denied) span.denied = true;
    return span;
  });
}

export function buildTimeline(input: TimelineInput): Timeline {
  const story = new Story(input);
  const marks = readMarks(story);
  const spawnOf = buildAgents(story, marks);
  const turns = turnsOf(story);
  const times: ToolTimes = new Map();
  const tools = toolsOf(story, marks, times);
  loseUnanswered(story, marks, tools);
  cutOff(story, times);
  const toolById = new Map(tools.map((t) => [t.id, t]));
  const jobs = jobsOf(story, marks, toolById);
  const returns = returnsOf(story, marks, spawnOf, toolById);
  const hosts = hostsOf(input);
  let start: string | undefined;
  let end: string | undefined;
  for (const list of [turns, tools, jobs, hosts] as readonly Span[][])
    for (const span of list) {
      if (start === undefined || span.start < start) start = span.start;
      const last = span.end ?? span.start;
      if (end === undefined || last > end) end = last;
    }
  return {
    id: input.sessionId,
    lastSeq: input.lastSeq,
    ...(start !== undefined ? { start, end } : {}),
    ...(input.truncated ? { truncated: true as const } : {}),
    agents: [...story.agents.values()],
    turns,
    jobs,
    tools,
    returns,
    hosts,
  };
}
