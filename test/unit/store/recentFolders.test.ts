import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MAX_RECENT_FOLDERS, recentFolders, rememberFolder } from '../../../electron/store/recentFolders.ts';
import { tempHome } from '../../helpers/tempHome.ts';

// The folders the New session form offers again. What a user sees of it (the list under the
// path field in browser mode) is in test/e2e/renderer.test.ts.

const home = tempHome();
afterAll(() => home.remove());

describe('recent project folders', () => {
  it('keeps the last few, newest first, each once, and says which are gone', () => {
    expect(MAX_RECENT_FOLDERS).toBe(8);
    const folders = Array.from({ length: 10 }, (_, i) => join(home.root, `p${i}`));
    for (const folder of folders) {
      mkdirSync(folder);
      rememberFolder(home, folder);
    }
    rememberFolder(home, folders[3]!);
    const listed = recentFolders(home);
    expect(listed.map((f) => f.path)).toEqual([3, 9, 8, 7, 6, 5, 4, 2].map((i) => folders[i]));
    expect(listed.every((f) => f.exists)).toBe(true);
    rememberFolder(home, join(home.root, 'removed-since'));
    expect(recentFolders(home)[0]).toEqual({ path: join(home.root, 'removed-since'), exists: false });
  });

  it('takes a file it cannot read as no history, and drops entries that are not absolute paths', () => {
    writeFileSync(join(home.root, 'recent-folders.json'), '{"not": "a list"');
    expect(recentFolders(home)).toEqual([]);
    writeFileSync(join(home.root, 'recent-folders.json'), JSON.stringify(['relative/path', 42, '/tmp', null]));
    expect(recentFolders(home)).toEqual([{ path: '/tmp', exists: true }]);
    rememberFolder(home, home.root);
    expect(recentFolders(home).map((f) => f.path)).toEqual([home.root, '/tmp']);
  });
});
