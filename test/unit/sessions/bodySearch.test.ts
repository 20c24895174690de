import { afterAll, expect, it } from 'vitest';
import { searchBodies } from '../../../electron/sessions/bodySearch.ts';
import { SessionEventStore } from '../../../electron/sessions/sessionEventStore.ts';
import { seedSessions } from '../../../electron/dev/seedSessions.ts';
import { sessionPaths } from '../../../electron/store/paths.ts';
import { tempHome } from '../../helpers/tempHome.ts';

const home = tempHome();
afterAll(() => home.remove());

it('stops reading as soon as the client has gone', async () => {
  const [session] = await seedSessions(home, { sessions: 1, events: 3000, bodyBytes: 16_384 });
  const store = SessionEventStore.open(session!.id, sessionPaths(home, session!.id).dbPath);
  let checks = 0;
  const full = await searchBodies(store, 'zzz-not-there', () => false);
  const abandoned = await searchBodies(store, 'zzz-not-there', () => ++checks >= 1);
  store.close();
  expect(full!.lastSeq).toBeGreaterThan(2900);
  expect(full!.seqs).toEqual([]);
  expect(abandoned).toBeNull();
  expect(checks).toBe(1);
}, 60_000);
