import { afterAll, expect, it } from 'vitest';
import type { SessionId } from '../../../electron/contract/ids.ts';
import { ChangeFeed } from '../../../electron/sessions/changeFeed.ts';
import { sessionPaths } from '../../../electron/store/paths.ts';
import { sessionCommits } from '../../../electron/store/sessionCommits.ts';
import { tempHome } from '../../helpers/tempHome.ts';

const home = tempHome();
afterAll(() => home.remove());

const A = '0b5c1c3e-1111-4222-8333-444455556666' as SessionId;
const B = '0b5c1c3e-1111-4222-8333-777755556666' as SessionId;
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

it('listens to the commits once however many readers listen, and stops when the last one leaves', () => {
  const before = sessionCommits.listenerCount('commit');
  const feed = new ChangeFeed(home, 2 ** 30);
  const offs = [feed.listen(() => {}), feed.listen(() => {}), feed.listen(() => {})];
  expect(sessionCommits.listenerCount('commit')).toBe(before + 1);
  for (const off of offs) off();
  expect(sessionCommits.listenerCount('commit')).toBe(before);
});

it('announces each committed session of its home once per turn, whatever the burst', async () => {
  const feed = new ChangeFeed(home, 2 ** 30);
  const heard: (SessionId | null)[] = [];
  const off = feed.listen((id) => heard.push(id));
  for (let i = 0; i < 5; i++) sessionCommits.emit('commit', sessionPaths(home, A).dbPath);
  sessionCommits.emit('commit', sessionPaths(home, B).dbPath);
  sessionCommits.emit('commit', sessionPaths(tempHomeElsewhere, A).dbPath);
  expect(heard).toEqual([]);
  await nextTurn();
  expect(heard).toEqual([A, B]);
  off();
});

it('asks every listener to probe on each round, and a listener that throws does not stop the others', async () => {
  const feed = new ChangeFeed(home, 5);
  const heard: (SessionId | null)[] = [];
  const offBad = feed.listen(() => {
    throw new Error('one bad reader');
  });
  const off = feed.listen((id) => heard.push(id));
  await new Promise((resolve) => setTimeout(resolve, 30));
  expect(heard.length).toBeGreaterThan(0);
  expect(heard.every((id) => id === null)).toBe(true);
  offBad();
  off();
});

const tempHomeElsewhere = { ...home, sessionsRunDir: `${home.sessionsRunDir}-elsewhere` };
