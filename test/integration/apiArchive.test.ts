import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer, type ApiServer } from '../../electron/api/server.ts';
import { vacuumSessions } from '../../electron/archive/vacuumSessions.ts';
import { seedSessions } from '../../electron/dev/seedSessions.ts';
import { openMainDb } from '../../electron/store/mainDb.ts';
import { call } from '../helpers/apiClient.ts';
import { decode, sessionList } from '../helpers/cortexClient.ts';
import { liveSession } from '../helpers/sessionFixture.ts';
import { tempHome } from '../helpers/tempHome.ts';

// Archive and erase semantics of GET and DELETE /v1/sessions, on a home of its own: erasing
// everything would pull the ground from under the other API tests.

const home = tempHome();
let api: ApiServer;
let vacuumed: string;
let resident: string[];

interface Row {
  id: string;
  resident?: boolean;
  eventCount: number;
  totalTokens?: number;
}
interface Listing {
  sessions: Row[];
  archive?: { bytes: number; maxBytes: number; retentionDays: number };
}

beforeAll(async () => {
  const seeded = await seedSessions(home, { sessions: 3, events: 60, seed: 5 });
  const db = openMainDb(home);
  // Seeded sessions start a day apart, so 2.5 days compacts the oldest alone.
  const report = await vacuumSessions(home, db, { olderThanMs: 2.5 * 86_400_000, includeResumable: true });
  db.close();
  expect(report.vacuumed.map((v) => v.id)).toEqual([seeded[0]!.id]);
  vacuumed = seeded[0]!.id;
  resident = seeded.slice(1).map((s) => s.id);
  api = await startApiServer({ home, port: 0, allowDelete: true });
}, 60_000);
afterAll(async () => {
  await api.close();
  home.remove();
});

// Each listing is read as agentop's ListSessions decodes it, so a vacuumed row must fit its Go types too.
const list = async (query = ''): Promise<Listing> => decode(sessionList, (await call(api.url, `/v1/sessions${query}`)).json());

describe('GET /v1/sessions?archived=true', () => {
  it('lists only resident sessions, without resident or archive keys, by default', async () => {
    const listing = await list();
    expect(listing.sessions.map((s) => s.id).sort()).toEqual([...resident].sort());
    expect(listing).not.toHaveProperty('archive');
    for (const row of listing.sessions) expect(row).not.toHaveProperty('resident');
  });

  it('adds the vacuumed session with resident:false, leaves resident out on the others, and sends the archive object', async () => {
    const listing = await list('?archived=true');
    expect(listing.sessions.map((s) => s.id).sort()).toEqual([vacuumed, ...resident].sort());
    const archivedRow = listing.sessions.find((s) => s.id === vacuumed)!;
    expect(archivedRow).toMatchObject({ resident: false, active: false });
    // main.db's rollup still knows its tokens, cache tokens included.
    expect(archivedRow.totalTokens).toBeGreaterThan(archivedRow.eventCount);
    for (const row of listing.sessions.filter((s) => s.id !== vacuumed)) expect(row).not.toHaveProperty('resident');
    expect(Object.keys(listing.archive!).sort()).toEqual(['bytes', 'maxBytes', 'retentionDays']);
    expect(listing.archive!.bytes).toBeGreaterThan(0);
    expect(listing.archive).toMatchObject({ maxBytes: 0, retentionDays: 0 });
  });
});

describe('DELETE', () => {
  it('erases one session: it is listed nowhere after, and a second DELETE of it is 404', async () => {
    const [id] = resident;
    const first = await call(api.url, `/v1/sessions/${id}`, { method: 'DELETE' });
    expect(first.status).toBe(200);
    expect(first.json()).toMatchObject({ sessions: 1, archivedSessions: 0 });
    expect((await list('?archived=true')).sessions.map((s) => s.id)).not.toContain(id);
    const second = await call(api.url, `/v1/sessions/${id}`, { method: 'DELETE' });
    expect(second.status).toBe(404);
    expect(second.json()).toEqual({ error: 'session not found' });
  });

  it('refuses a running session with 409 and keeps it', async () => {
    const running = await liveSession(home, 'busy');
    const reply = await call(api.url, `/v1/sessions/${running.id}`, { method: 'DELETE' });
    expect(reply.status).toBe(409);
    expect(reply.json().error).toMatch(/is running; stop it before erasing it/);
    expect((await list()).sessions.map((s) => s.id)).toContain(running.id);
    await running.end();
  });

  it('DELETE /v1/sessions leaves only the running sessions listed, and says how many it kept', async () => {
    const running = await liveSession(home, null);
    const reply = await call(api.url, '/v1/sessions', { method: 'DELETE' });
    expect(reply.status).toBe(200);
    // The vacuumed one is archived; the other seeded one and the stopped "busy" one were resident.
    expect(reply.json()).toMatchObject({ sessions: 2, archivedSessions: 1, keptRunning: 1 });
    expect((await list('?archived=true')).sessions.map((s) => s.id)).toEqual([running.id]);
    expect((await list()).sessions.map((s) => s.id)).toEqual([running.id]);
    expect((await call(api.url, `/v1/sessions/${vacuumed}`, { method: 'DELETE' })).status).toBe(404);
    await running.end();
  });
});
