import { readTimeline, type Span } from './timeline.ts';
import type { Timeline } from '../contract/appContract.ts';
import type { OpenSession } from './sessionStores.ts';

// sessions.timeline: the events API's timeline (agents, turns, tools, jobs, returns and hosts on
// one axis) in the window's shape. A span still open (a running call) ends at its start and says
// it is open, so the view can draw it up to now.

const ends = (s: Span): { start: string; end: string; seq: number; open: boolean } => ({
  start: s.start,
  end: s.end ?? s.start,
  seq: s.seq,
  open: s.end === undefined,
});

export function windowTimeline(session: OpenSession, ended: boolean): Timeline {
  const tables = session.tables();
  if (!['model_calls', 'tool_calls', 'tool_responses', 'net_events'].every((t) => tables.has(t)))
    return { start: null, end: null, agents: [], turns: [], tools: [], jobs: [], returns: [], hosts: [] };
  const t = readTimeline(session.store, ended);
  return {
    start: t.start ?? null,
    end: t.end ?? null,
    agents: t.agents.map((a) => ({
      id: a.id,
      parent: a.parent ?? null,
      label: a.label,
      type: a.type ?? null,
      spawnTool: a.spawnTool ?? null,
      spawnedAt: a.spawnedAt ?? null,
      returnedAt: a.returnedAt ?? null,
    })),
    turns: t.turns.map((s) => ({
      ...ends(s),
      agent: s.agent,
      error: s.error === true,
      resent: s.resent === true,
      label: [s.model ?? 'model call', s.finish, s.error ? 'error' : undefined, s.resent ? 'resent' : undefined]
        .filter(Boolean)
        .join(' · '),
    })),
    tools: t.tools.map((s) => ({ ...ends(s), agent: s.agent, id: s.id, label: s.preview ? `${s.name}: ${s.preview}` : s.name })),
    jobs: t.jobs.map((s) => ({ ...ends(s), agent: s.agent, id: s.id, label: `background job ${s.id}` })),
    returns: t.returns.map((r) => ({ agent: r.agent, into: r.into, at: r.at, seq: r.seq })),
    hosts: t.hosts.map((s) => ({
      ...ends(s),
      host: s.host,
      label: [s.kind, s.status !== undefined ? String(s.status) : undefined, s.denied ? 'denied' : undefined].filter(Boolean).join(' · '),
    })),
  };
}
