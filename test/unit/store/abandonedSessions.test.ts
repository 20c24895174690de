import { spawn } from 'node:child_process';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SessionId } from '../../../electron/contract/ids.ts';
import { processStartTicks } from '../../../electron/platform/processIdentity.ts';
import { listSessions } from '../../../electron/sessions/sessionSummary.ts';
import { ABANDONED_REASON, abandonedNotes, endAbandoned, endAbandonedSessions } from '../../../electron/store/abandonedSessions.ts';
import { openMainDb } from '../../../electron/store/mainDb.ts';
import { getSession, markRunning } from '../../../electron/store/registry.ts';
import type { SessionRunner } from '../../../electron/store/sessionRunner.ts';
import type { SessionWriter } from '../../../electron/store/sessionWriter.ts';
import { httpsExchange } from '../../helpers/exchanges.ts';
import { liveSession } from '../../helpers/sessionFixture.ts';
import { tempHome } from '../../helpers/tempHome.ts';

// A session names the process recording it; once that process is gone the first reader ends it
// crashed, at its last row. The identity is pid and start time, as the owner lock's is.

/** The identity of a process that has run and exited: what main.db holds for a killed recorder. */
async function deadRunner(): Promise<SessionRunner> {
  const child = spawn('sleep', ['30']);
  await new Promise((r) => child.once('spawn', r));
  const runner = { pid: child.pid!, start: processStartTicks(child.pid!) };
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
  return runner;
}

let home: ReturnType<typeof tempHome>;
const writers: SessionWriter[] = [];
beforeEach(() => (home = tempHome()));
afterEach(async () => {
  for (const writer of writers.splice(0)) await writer.close();
  home.remove();
});

/** A session whose writer committed rows at the given times and then lost its process (the writer is left open, as a killed one is). */
async function sessionWithRows(times: readonly string[], runner: SessionRunner | null): Promise<SessionId> {
  const live = await liveSession(home, null);
  writers.push(live.writer);
  for (const [i, timestamp] of times.entries())
    void live.recorder.record(httpsExchange('api.example.com', `/n/${i}`, { startedAt: new Date(timestamp) }));
  await live.recorder.settled();
  await live.writer.flush();
  const db = openMainDb(home);
  db.prepare('UPDATE sessions SET runner_pid = ?, runner_start = ? WHERE id = ?').run(runner?.pid ?? null, runner?.start ?? null, live.id);
  db.close();
  return live.id;
}

/** The session's status as a command sees it: through openMainDb, which ends abandoned sessions first. */
function statusOf(id: SessionId): string {
  const db = openMainDb(home);
  try {
    return getSession(db, id)!.status;
  } finally {
    db.close();
  }
}

describe('sessions whose recorder is gone', () => {
  it('are ended crashed at their last recorded row and rolled up, by the first open of main.db', async () => {
    const times = ['2025-03-01T10:00:00.000Z', '2025-03-01T10:00:01.500Z', '2025-03-01T10:00:02.250Z'];
    const id = await sessionWithRows(times, await deadRunner());
    const db = openMainDb(home);
    const record = getSession(db, id)!;
    db.close();
    expect(record).toMatchObject({ status: 'crashed', statusReason: ABANDONED_REASON, stoppedAt: times[2] });
    expect(record.totals.requests).toBe(3);
    expect(record.rolledUpAt).not.toBeNull();
  });

  it('one with no rows ends where it began', async () => {
    const id = await sessionWithRows([], await deadRunner());
    const db = openMainDb(home);
    const record = getSession(db, id)!;
    db.close();
    expect(record).toMatchObject({ status: 'crashed', stoppedAt: record.createdAt });
  });

  it('leaves alone a session whose recorder runs, one that names no recorder, and one whose pid lives on under another start time', async () => {
    const mine = await sessionWithRows(['2025-03-01T10:00:00.000Z'], { pid: process.pid, start: processStartTicks(process.pid) });
    const unnamed = await sessionWithRows(['2025-03-01T10:00:00.000Z'], null);
    // The kernel gave the dead recorder's pid to another program: that program is not the recorder.
    const reused = await sessionWithRows(['2025-03-01T10:00:00.000Z'], { pid: process.pid, start: 'another start' });
    expect(statusOf(mine)).toBe('running');
    expect(statusOf(unnamed)).toBe('running');
    expect(statusOf(reused)).toBe('crashed');
  });

  it('never ends a session resumed meanwhile by a live process (the end is a compare-and-set on the recorder)', async () => {
    const dead = await deadRunner();
    const id = await sessionWithRows(['2025-03-01T10:00:00.000Z'], dead);
    // Judged dead from a read made before this process resumed it; the end must not land.
    const stale = { id, createdAt: '2025-03-01T09:00:00.000Z', ...dead };
    const db = openMainDb(home);
    expect(getSession(db, id)!.status).toBe('crashed');
    markRunning(db, id);
    expect(endAbandoned(home, db, stale)).toBe(false);
    expect(endAbandonedSessions(home, db)).toEqual([]);
    expect(getSession(db, id)!.status).toBe('running');
    db.close();
  });

  it('are shown crashed by a long-lived reader (the window and the API list) on its next look', async () => {
    const db = openMainDb(home);
    const id = await sessionWithRows(['2025-03-01T10:00:00.000Z'], await deadRunner());
    // This connection was open before the recorder died: only the list's own look can end it.
    expect(db.prepare('SELECT status FROM sessions WHERE id = ?').get(id)).toEqual({ status: 'running' });
    const row = listSessions({ home, mainDb: db, live: new Set() }).find((s) => s.id === id)!;
    expect(row).toMatchObject({ status: 'crashed', statusReason: ABANDONED_REASON, stoppedAt: '2025-03-01T10:00:00.000Z' });
    db.close();
  });

  it('are noted by capsem check as missing at most the writer batch that was not yet committed', async () => {
    const id = await sessionWithRows(['2025-03-01T10:00:00.000Z'], await deadRunner());
    const db = openMainDb(home);
    const record = getSession(db, id);
    db.close();
    expect(abandonedNotes(record)).toEqual([expect.stringMatching(/may be missing, up to one batch \(50 ms of traffic/)]);
    expect(abandonedNotes({ ...record!, status: 'crashed', statusReason: 'QEMU exited (killed by SIGKILL)' })).toEqual([]);
    expect(abandonedNotes(null)).toEqual([]);
  });
});
