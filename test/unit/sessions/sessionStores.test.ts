import { randomUUID } from 'node:crypto';
import { afterAll, expect, it } from 'vitest';
import type { SessionId } from '../../../electron/contract/ids.ts';
import { SessionNotOnDiskError, SessionStores } from '../../../electron/sessions/sessionStores.ts';
import { ensurePrivateDir, sessionPaths } from '../../../electron/store/paths.ts';
import { openSessionDbForWriting } from '../../../electron/store/sessionDb.ts';
import { tempHome } from '../../helpers/tempHome.ts';

// The one cache of read-only session.db connections, shared by the window and the events API.

const home = tempHome();
afterAll(() => home.remove());

function recorded(): SessionId {
  const id = randomUUID() as SessionId;
  const { dir, dbPath } = sessionPaths(home, id);
  ensurePrivateDir(dir);
  openSessionDbForWriting(dbPath).close();
  return id;
}

it('keeps one connection per session and closes the least recently used past 16', () => {
  const stores = new SessionStores(home);
  const ids = Array.from({ length: 17 }, recorded);
  const first = stores.get(ids[0]!);
  expect(stores.get(ids[0]!)).toBe(first);
  for (const id of ids.slice(1)) stores.get(id);
  expect(first.store.db.open).toBe(false);
  expect(stores.get(ids[16]!).store.db.open).toBe(true);
  stores.close();
});

it('says a session with no session.db is not on disk', () => {
  const stores = new SessionStores(home);
  expect(() => stores.get(randomUUID() as SessionId)).toThrow(SessionNotOnDiskError);
});

it('closes a session it is told to forget (before its files are erased), and opens it afresh after', () => {
  const stores = new SessionStores(home);
  const id = recorded();
  const before = stores.get(id);
  stores.forget(id);
  expect(before.store.db.open).toBe(false);
  expect(stores.get(id).store.db.open).toBe(true);
  stores.close();
});
