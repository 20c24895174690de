import { describe, expect, it } from 'vitest';
import { summarisedFolder } from '../../../electron/changes/summarisedFolders.ts';
import { FsEventRows, type FsChange } from '../../../electron/recording/fsEventRows.ts';

// The guest's file changes as fs_events rows: the user's own paths one row each, the churn inside
// .git/ and node_modules/ one row per batch, folder and action. The real thing (git and an npm-like
// churn in a real VM) is in test/integration/vmWorkspace.test.ts.

const at = (ms: number) => new Date(ms).toISOString();
const change = (action: FsChange['action'], path: string, size: number | null, ts_ms = 1_000, is_dir = false): FsChange => ({
  action,
  path,
  size,
  is_dir,
  ts_ms,
});

describe('fs_events rows', () => {
  it('finds the summarised folder wherever it sits, and leaves a file named .git (a worktree pointer) to the user', () => {
    expect(summarisedFolder('node_modules/a/b/index.js', false)).toBe('node_modules/');
    expect(summarisedFolder('web/node_modules/x/node_modules/y.js', false)).toBe('web/node_modules/');
    expect(summarisedFolder('.git/objects/ab/cdef', false)).toBe('.git/');
    expect(summarisedFolder('.git', true)).toBe('.git/');
    expect(summarisedFolder('.git', false)).toBeNull();
    expect(summarisedFolder('src/.gitignore', false)).toBeNull();
    expect(summarisedFolder('my_node_modules/a', false)).toBeNull();
  });

  it("writes the user's own changes at once and one row per folder and action for the rest, with how many paths and bytes", () => {
    const rows = new FsEventRows();
    const now = rows.take([
      change('created', 'src/a.ts', 12, 1_000),
      change('created', '.git', null, 1_001, true),
      change('created', '.git/objects/ab', 4096, 1_002, true),
      change('created', '.git/objects/ab/cdef', 100, 1_003),
      change('modified', '.git/index', 200, 1_004),
      change('created', 'node_modules/left-pad/index.js', 50, 1_005),
      change('created', 'node_modules/left-pad/package.json', 25, 999),
      change('deleted', 'node_modules/old', null, 1_006, true),
    ]);
    expect(now).toEqual([{ timestamp: at(1_000), action: 'created', path: 'src/a.ts', size: 12, entries: null }]);
    expect(rows.holding).toBe(true);
    expect(rows.flush()).toEqual([
      { timestamp: at(1_001), action: 'created', path: '.git/', size: 100, entries: 3 },
      { timestamp: at(1_004), action: 'modified', path: '.git/', size: 200, entries: 1 },
      { timestamp: at(999), action: 'created', path: 'node_modules/', size: 75, entries: 2 },
      { timestamp: at(1_006), action: 'deleted', path: 'node_modules/', size: null, entries: 1 },
    ]);
    expect(rows.holding).toBe(false);
    expect(rows.flush()).toEqual([]);
  });

  it('adds the frames of one batch into one summary', () => {
    const rows = new FsEventRows();
    for (let frame = 0; frame < 40; frame++) {
      rows.take(Array.from({ length: 256 }, (_, i) => change('created', `node_modules/p${frame}/f${i}.js`, 1)));
    }
    expect(rows.flush()).toEqual([{ timestamp: at(1_000), action: 'created', path: 'node_modules/', size: 10_240, entries: 10_240 }]);
  });
});
