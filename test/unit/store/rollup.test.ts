import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedSessions } from '../../../electron/dev/seedSessions.ts';
import { SessionRecorder } from '../../../electron/recording/sessionRecorder.ts';
import { openMainDb } from '../../../electron/store/mainDb.ts';
import { sessionPaths } from '../../../electron/store/paths.ts';
import { getSession, registerSession } from '../../../electron/store/registry.ts';
import { rollUpSession } from '../../../electron/store/rollup.ts';
import { openSessionDbReadOnly } from '../../../electron/store/sessionDb.ts';
import { SessionWriter } from '../../../electron/store/sessionWriter.ts';
import { ensurePrivateDir } from '../../../electron/store/paths.ts';
import { deniedBy, httpsExchange } from '../../helpers/exchanges.ts';
import { tempHome } from '../../helpers/tempHome.ts';

const home = tempHome();
let seeded: Awaited<ReturnType<typeof seedSessions>>;
beforeAll(async () => {
  seeded = await seedSessions(home, { sessions: 2, events: 150, seed: 3 });
});
afterAll(() => home.remove());

const snapshot = (db: ReturnType<typeof openMainDb>, id: string) => ({
  session: db.prepare('SELECT * FROM sessions WHERE id = ?').get(id),
  ai: db.prepare('SELECT * FROM ai_usage WHERE session_id = ? ORDER BY provider, model').all(id),
  tools: db.prepare('SELECT * FROM tool_usage WHERE session_id = ? ORDER BY tool_name, origin').all(id),
  mcp: db.prepare('SELECT * FROM mcp_usage WHERE session_id = ? ORDER BY server_name').all(id),
});

describe('main.db rollup', () => {
  it('matches the figures in the session database', () => {
    const db = openMainDb(home);
    const record = getSession(db, seeded[0]!.id)!;
    const sdb = openSessionDbReadOnly(sessionPaths(home, record.id).dbPath);
    const expected = sdb
      .prepare(
        `SELECT (SELECT count(*) FROM net_events) AS req, (SELECT sum(input_tokens) FROM model_calls) AS tin,
      (SELECT sum(output_tokens) FROM model_calls) AS tout, (SELECT count(*) FROM tool_calls) AS tools,
      (SELECT count(*) FROM tool_calls WHERE origin = 'mcp') AS mcp, (SELECT count(*) FROM fs_events) AS fs,
      (SELECT sum(estimated_cost_usd) FROM model_calls) AS cost`,
      )
      .get() as Record<string, number>;
    sdb.close();
    expect(record.status).toBe('stopped');
    expect(record.totals).toMatchObject({
      requests: expected.req,
      inputTokens: expected.tin,
      outputTokens: expected.tout,
      toolCalls: expected.tools,
      mcpCalls: expected.mcp,
      fileEvents: expected.fs,
    });
    expect(record.totals.costUsd).toBeCloseTo(expected.cost!, 9);
    const ai = db
      .prepare('SELECT sum(call_count) AS calls, sum(input_tokens) AS tin FROM ai_usage WHERE session_id = ?')
      .get(record.id) as { calls: number; tin: number };
    expect(ai.tin).toBe(expected.tin);
    expect(ai.calls).toBe(record.totals.modelCalls);
    db.close();
  });

  it('gives the same rows when run twice', () => {
    const db = openMainDb(home);
    const id = seeded[0]!.id;
    const before = snapshot(db, id);
    rollUpSession(home, db, id, { status: 'stopped' });
    rollUpSession(home, db, id, { status: 'stopped' });
    expect(snapshot(db, id)).toEqual(before);
    db.close();
  });

  it('rolls up a crashed session with its reason', () => {
    const db = openMainDb(home);
    const crashed = getSession(db, seeded[1]!.id)!;
    expect(crashed.status).toBe('crashed');
    expect(crashed.statusReason).toMatch(/signal 9/);
    expect(crashed.totals.requests).toBeGreaterThan(0);
    db.close();
  });

  it('rolls up a session whose writer never closed (killed owner) from what reached disk', async () => {
    const db = openMainDb(home);
    const record = registerSession(db, { name: 'abandoned' });
    const paths = sessionPaths(home, record.id);
    ensurePrivateDir(paths.dir);
    const writer = await SessionWriter.open(paths.dbPath);
    const recorder = new SessionRecorder(writer, 1 << 20);
    for (let i = 0; i < 10; i++) void recorder.record(httpsExchange('example.com', `/${i}`, i < 7 ? {} : deniedBy('default.deny')));
    await recorder.settled();
    await writer.flush();
    rollUpSession(home, db, record.id, { status: 'crashed', reason: 'owner process disappeared' });
    const after = getSession(db, record.id)!;
    expect(after.totals).toMatchObject({ requests: 10, allowedRequests: 7, deniedRequests: 3 });
    expect(after.status).toBe('crashed');
    await writer.close();
    db.close();
  });
});
