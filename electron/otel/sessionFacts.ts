import type { SessionRecord } from '../store/registry.ts';
import type { SessionFacts } from './sessionSpans.ts';

/** What the span mapping needs of a session's main.db row: a session that no longer runs has ended, when it stopped or was last seen. */
export function sessionFactsOf(record: SessionRecord): SessionFacts {
  const ended = record.status !== 'running';
  return {
    id: record.id,
    name: record.name,
    createdAt: record.createdAt,
    stoppedAt: ended ? (record.stoppedAt ?? record.updatedAt) : null,
    agent: record.activity.agent,
  };
}
