import { readTimeline } from './timeline.ts';
import type { Timeline } from '../contract/appContract.ts';
import type { OpenSession } from './sessionStores.ts';

// sessions.timeline: the events API's timeline (turns, tools, hosts on one axis) in the window's
// shape. A span still open (a running call) ends at its start until it finishes.

export function windowTimeline(session: OpenSession, ended: boolean): Timeline {
  const tables = session.tables();
  if (!['model_calls', 'tool_calls', 'tool_responses', 'net_events'].every((t) => tables.has(t)))
    return { start: null, end: null, turns: [], tools: [], hosts: [] };
  const t = readTimeline(session.store, ended);
  return {
    start: t.start ?? null,
    end: t.end ?? null,
    turns: t.turns.map((s) => ({
      start: s.start,
      end: s.end ?? s.start,
      seq: s.seq,
      label: [s.model ?? 'model call', s.finish, s.error ? 'error' : undefined].filter(Boolean).join(' · '),
    })),
    tools: t.tools.map((s) => ({
      start: s.start,
      end: s.end ?? s.start,
      seq: s.seq,
      label: s.preview ? `${s.name}: ${s.preview}` : s.name,
    })),
    hosts: t.hosts.map((s) => ({
      start: s.start,
      end: s.end ?? s.start,
      seq: s.seq,
      host: s.host,
      label: [s.kind, s.status !== undefined ? String(s.status) : undefined, s.denied ? 'denied' : undefined].filter(Boolean).join(' · '),
    })),
  };
}
