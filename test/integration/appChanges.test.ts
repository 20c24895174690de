import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppCore } from '../../electron/app/appCore.ts';
import type { CallName, CallParams, CallResult } from '../../electron/contract/appContract.ts';
import type { SessionId } from '../../electron/contract/ids.ts';
import { seedChangesSession } from '../../electron/dev/seedChanges.ts';
import { sessionPaths } from '../../electron/store/paths.ts';
import { tempHome } from '../helpers/tempHome.ts';

// The Files view's calls over `capsem dev seed --changes`: each change with the tool call that
// made it and its Conversation turn, a change's diff, a revert that says what it did and can be
// reverted in turn. Results are checked against the contract.

const home = tempHome();
let core: AppCore;
let id: SessionId;
const call = <N extends CallName>(name: N, params: CallParams<N>): Promise<CallResult<N>> =>
  core.handle(name, params) as Promise<CallResult<N>>;

beforeAll(async () => {
  id = (await seedChangesSession(home, 'changes')).id;
  core = new AppCore({ home, checkResults: true });
}, 30_000);
afterAll(() => {
  core.close();
  home.remove();
});

describe('the Files view of a session that changed its folder', () => {
  it('lists each change with the tool call and Conversation turn that made it, or none for the user at the shell', async () => {
    const page = await call('sessions.changes', { id, offset: 0, limit: 100, turn: null, path: null });
    expect(page.baseline).toMatchObject({ files: 5 });
    expect(page.changes.map((c) => [c.path, c.action, c.source?.toolName ?? null, c.source?.turn ?? null, c.diffable])).toEqual([
      ['src/retry.ts', 'modified', 'Edit', 1, true],
      ['src/retry.ts', 'modified', 'Edit', 1, true],
      ['README.md', 'modified', 'Bash', 2, true],
      ['CHANGELOG.md', 'created', 'Write', 4, true],
      ['src/legacy.ts', 'deleted', 'Bash', 4, true],
      ['scripts/release.sh', 'modified', 'Bash', 4, true],
      ['notes.txt', 'created', null, null, true],
    ]);
    const turn = await call('sessions.changes', { id, offset: 0, limit: 100, turn: 4, path: null });
    expect(turn.changes.map((c) => c.path)).toEqual(['CHANGELOG.md', 'src/legacy.ts', 'scripts/release.sh']);
    const folder = await call('sessions.changes', { id, offset: 0, limit: 1, turn: null, path: 'src' });
    expect(folder).toMatchObject({ total: 3, nextOffset: 1 });
  });

  it("shows a turn's changes per file as hunks", async () => {
    const diffs = await call('sessions.diff', { id, target: { kind: 'turn', turn: 1 } });
    expect(diffs).toHaveLength(1);
    expect(diffs[0]).toMatchObject({ path: 'src/retry.ts', status: 'modified', binary: false, truncated: false });
    expect(diffs[0]!.hunks.flatMap((h) => h.lines.filter((l) => l.startsWith('+')))).toEqual([
      '+export const BUDGET = 3;',
      '+      if (attempt >= BUDGET) throw err;',
    ]);
    const mode = await call('sessions.diff', { id, target: { kind: 'paths', paths: ['scripts'] } });
    expect(mode[0]).toMatchObject({ status: 'mode', oldMode: 0o100755, newMode: 0o100644, hunks: [] });
  });

  it('reverts one change, says what it did, and reverts that revert', async () => {
    const file = join(sessionPaths(home, id).workspaceDir, 'src/legacy.ts');
    const deleted = (await call('sessions.changes', { id, offset: 0, limit: 10, turn: null, path: 'src/legacy.ts' })).changes[0]!;
    expect(await call('sessions.revert', { id, target: { kind: 'change', seq: deleted.seq } })).toEqual({
      restored: [{ path: 'src/legacy.ts', action: 'restored' }],
      refused: [],
    });
    expect(readFileSync(file, 'utf8')).toBe('// Kept for the old API.\nexport const legacy = true;\n');
    const page = await call('sessions.changes', { id, offset: 0, limit: 100, turn: null, path: 'src/legacy.ts' });
    const restored = page.changes.at(-1)!;
    expect(restored).toMatchObject({ action: 'restored', source: null, diffable: true, beforeHash: null });
    expect(await call('sessions.revert', { id, target: { kind: 'change', seq: restored.seq } })).toEqual({
      restored: [{ path: 'src/legacy.ts', action: 'removed' }],
      refused: [],
    });
    expect(() => readFileSync(file)).toThrow(/ENOENT/);
  });

  it('names a change the session does not have', async () => {
    await expect(call('sessions.diff', { id, target: { kind: 'change', seq: 99_999 } })).rejects.toMatchObject({ code: 'unknown_change' });
  });
});
