import { statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { seedSessions } from '../../../electron/dev/seedSessions.ts';
import { capsemHome, imageCacheDir, legacyImagesDir, sessionPaths } from '../../../electron/store/paths.ts';
import { tempHome } from '../../helpers/tempHome.ts';

const home = tempHome();
afterAll(() => home.remove());

it('keeps session folders 0700 and database files 0600, whatever the umask', async () => {
  const previous = process.umask(0o022);
  try {
    const [session] = await seedSessions(home, { sessions: 1, events: 20 });
    const paths = sessionPaths(home, session!.id);
    for (const dir of [home.root, home.runDir, home.sessionsRunDir, paths.dir]) expect(statSync(dir).mode & 0o777, dir).toBe(0o700);
    for (const file of [paths.dbPath, home.mainDbPath]) expect(statSync(file).mode & 0o777, file).toBe(0o600);
  } finally {
    process.umask(previous);
  }
});

it('puts sessions under CAPSEM_HOME, or ~/.capsem when it is unset', () => {
  expect(capsemHome({ CAPSEM_HOME: '/srv/capsem' }).mainDbPath).toBe('/srv/capsem/sessions/main.db');
  expect(capsemHome({ HOME: '/home/ada' }).root).toMatch(/\.capsem$/);
});

it('keeps guest images per user: CAPSEM_IMAGE_CACHE, else the XDG cache folder, else ~/.cache', () => {
  expect(imageCacheDir({ CAPSEM_IMAGE_CACHE: '/srv/images', XDG_CACHE_HOME: '/x' })).toBe('/srv/images');
  expect(imageCacheDir({ XDG_CACHE_HOME: '/x/cache' })).toBe('/x/cache/capsem/images');
  // A relative XDG_CACHE_HOME is invalid by the XDG spec and ignored.
  expect(imageCacheDir({ XDG_CACHE_HOME: 'rel' })).toBe(join(homedir(), '.cache', 'capsem', 'images'));
  expect(imageCacheDir({})).toBe(join(homedir(), '.cache', 'capsem', 'images'));
  expect(legacyImagesDir(capsemHome({ CAPSEM_HOME: '/h' }))).toBe('/h/images');
});
