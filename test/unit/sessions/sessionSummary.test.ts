import { writeFileSync } from 'node:fs';
import { afterAll, expect, it } from 'vitest';
import { sessionFigures } from '../../../electron/sessions/sessionSummary.ts';
import { openMainDb } from '../../../electron/store/mainDb.ts';
import { ensurePrivateDir, sessionPaths } from '../../../electron/store/paths.ts';
import { getSession, registerSession, type SessionRecord } from '../../../electron/store/registry.ts';
import { httpsExchange } from '../../helpers/exchanges.ts';
import { liveSession } from '../../helpers/sessionFixture.ts';
import { tempHome } from '../../helpers/tempHome.ts';

// The one computation behind the window's list, `capsem list` and GET /v1/sessions. Where the
// three copies used to disagree, these pin the answer all three now give.

const home = tempHome();
afterAll(() => home.remove());

function recordOf(id: SessionRecord['id']): SessionRecord {
  const db = openMainDb(home);
  try {
    return getSession(db, id)!;
  } finally {
    db.close();
  }
}

it('reads a running session from its live session.db', async () => {
  const live = await liveSession(home);
  await live.recorder.record(httpsExchange('example.com', '/'));
  await live.writer.flush();
  const figures = sessionFigures(home, recordOf(live.id));
  expect(figures).toMatchObject({ onDisk: true, totals: { requests: 1, events: 1 } });
  expect(figures.activity.lastEventAt).not.toBeNull();
  await live.end();
});

it('falls back to the registry when a running session.db cannot be read, rather than failing the whole list', () => {
  const id = registered();
  const paths = sessionPaths(home, id);
  ensurePrivateDir(paths.dir);
  writeFileSync(paths.dbPath, 'not a database, or one mid-migration');
  const record = recordOf(id);
  expect(sessionFigures(home, record)).toMatchObject({ onDisk: true, totals: record.totals, activity: record.activity });
});

it('times a session from creation to its stop, to now while it runs, and to its last update when it ended without a stop time', () => {
  const base = { createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:00:05.000Z' };
  const record = (over: Partial<SessionRecord>): SessionRecord => ({ ...recordOf(registered()), ...base, ...over });
  const at = Date.parse(base.createdAt) + 60_000;
  expect(sessionFigures(home, record({ status: 'stopped', stoppedAt: '2026-01-01T00:00:02.000Z' }), at).durationMs).toBe(2000);
  expect(sessionFigures(home, record({ status: 'running', stoppedAt: null }), at).durationMs).toBe(60_000);
  expect(sessionFigures(home, record({ status: 'crashed', stoppedAt: null }), at).durationMs).toBe(5000);
  expect(sessionFigures(home, record({ status: 'stopped', stoppedAt: null, createdAt: 'not a time' }), at).durationMs).toBe(0);
});

/** A running session in main.db, with no session.db yet. */
function registered(): SessionRecord['id'] {
  const db = openMainDb(home);
  try {
    return registerSession(db, { mode: 'vm' }).id;
  } finally {
    db.close();
  }
}
