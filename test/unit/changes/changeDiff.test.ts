import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { applyPatch } from 'diff';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ContentStore, contentHash } from '../../../electron/changes/contentStore.ts';
import { DIFF_LINES_SHOWN, fileDiffOf, readSpan } from '../../../electron/changes/fileDiff.ts';
import { gitFilePatch } from '../../../electron/changes/gitPatch.ts';
import { MODE_FILE } from '../../../electron/changes/workspaceEntry.ts';
import { Conversations } from '../../../electron/sessions/conversation.ts';
import { SessionStores } from '../../../electron/sessions/sessionStores.ts';
import { WorkspaceChanges } from '../../../electron/sessions/workspaceChanges.ts';
import { AnthropicStory } from '../../helpers/agentStory.ts';
import { liveSession } from '../../helpers/sessionFixture.ts';
import { tempHome } from '../../helpers/tempHome.ts';
import { HOSTILE_NAME, recordEditSession } from '../../helpers/workspaceScene.ts';

const bytes = (content: Buffer) => ({ version: { hash: contentHash(content), mode: MODE_FILE }, content });
const side = (text: string) => bytes(Buffer.from(text));

describe('a change as a diff', () => {
  const home = tempHome();
  const store = ContentStore.open(home);
  afterAll(() => {
    store.close();
    home.remove();
  });

  it('gives hunks that jsdiff applies to the text before to give the text after', () => {
    const text = fc.array(fc.constantFrom('a', 'b', 'c\r', '', 'é', 'x y'), { maxLength: 30 }).map((lines) => lines.join('\n'));
    fc.assert(
      fc.property(text, text, (before, after) => {
        fc.pre(before !== after);
        const span = { path: 'f.txt', before: side(before).version, after: side(after).version, seqs: [1] };
        store.put(Buffer.from(before));
        store.put(Buffer.from(after));
        const diff = fileDiffOf(readSpan(span, store), span);
        expect(applyPatch(before, { oldFileName: 'f.txt', newFileName: 'f.txt', oldHeader: '', newHeader: '', hunks: diff.hunks })).toBe(
          after,
        );
      }),
      { numRuns: 200 },
    );
  });

  it('shows a file of more lines than the window takes up to the limit, cut inside its hunk and said to be cut', () => {
    const lines = Array.from({ length: DIFF_LINES_SHOWN + 10_000 }, (_, i) => `line ${i}`);
    const after = `${lines.join('\n')}\n`;
    store.put(Buffer.from(after));
    const span = { path: 'big.txt', before: 'absent' as const, after: side(after).version, seqs: [1] };
    const diff = fileDiffOf(readSpan(span, store), span);
    expect(diff.truncated).toBe(true);
    expect(diff.hunks.reduce((n, h) => n + h.lines.length, 0)).toBe(DIFF_LINES_SHOWN);
    expect(diff.hunks.at(-1)).toMatchObject({ newLines: DIFF_LINES_SHOWN, oldLines: 0 });
    expect(diff.hunks.at(-1)!.lines.at(-1)).toBe(`+line ${DIFF_LINES_SHOWN - 1}`);
  });

  it('a binary change is a GIT binary patch that git apply takes', () => {
    const root = mkdtempSync(join(tmpdir(), 'capsem-binary-'));
    spawnSync('git', ['init', '-q'], { cwd: root });
    const before = Buffer.from([0, 1, 2, 255, 10]);
    const after = Buffer.concat([before, Buffer.alloc(300, 7), Buffer.from([0])]);
    writeFileSync(join(root, 'blob.bin'), before);
    const r = spawnSync('git', ['apply', '-'], {
      cwd: root,
      input: Buffer.from(gitFilePatch('blob.bin', bytes(before), bytes(after)), 'latin1'),
    });
    expect(r.stderr.toString()).toBe('');
    expect(readFileSync(join(root, 'blob.bin')).equals(after)).toBe(true);
    rmSync(root, { recursive: true, force: true });
  });

  it('writes hostile names as git quotes them, and git apply creates and edits the file under that name', () => {
    const repo = mkdtempSync(join(tmpdir(), 'capsem-quote-'));
    try {
      spawnSync('git', ['init', '-q'], { cwd: repo });
      const names = ['a\nb.txt', 'q"uote\\back.txt', 'tab\there é.txt', 'sp ace.txt'];
      for (const [before, after] of [
        [null, 'one\ntwo\n'],
        ['one\ntwo\n', 'one\n2'],
      ] as const) {
        const patch = names.map((n) => gitFilePatch(n, before === null ? null : side(before), side(after))).join('');
        const r = spawnSync('git', ['apply', '-'], { cwd: repo, input: Buffer.from(patch, 'latin1') });
        expect(r.stderr.toString()).toBe('');
        for (const n of names) expect(readFileSync(join(repo, n), 'utf8')).toBe(after);
      }
    } finally {
      rmSync(repo, { recursive: true, force: true });
    }
  });
});

describe('where a change came from', () => {
  const home = tempHome();
  let changes: ReturnType<WorkspaceChanges['all']>;
  let stores: SessionStores;
  beforeAll(async () => {
    const live = await liveSession(home);
    const store = ContentStore.open(home);
    await recordEditSession(live, store, join(home.root, 'ws'), mkdtempSync(join(tmpdir(), 'capsem-snap-')), new AnthropicStory(live));
    await live.end();
    store.close();
    stores = new SessionStores(home);
    changes = new WorkspaceChanges(new Conversations()).all(stores.get(live.id), true);
  }, 30_000);
  afterAll(() => {
    stores.close();
    home.remove();
  });

  const sourceOf = (path: string, nth = 0) => changes.filter((c) => c.row.path === path)[nth]?.source ?? null;

  it('names the tool whose arguments name the path, over a shell command open at the same time', () => {
    expect(sourceOf('src/app.ts')).toMatchObject({ callId: 'toolu_edit', toolName: 'Edit', turn: 0, agent: 'main' });
    expect(sourceOf(HOSTILE_NAME)).toMatchObject({ callId: 'toolu_write', turn: 1 });
  });

  it('names the shell command for a path no open tool names', () => {
    expect(sourceOf('README.md')).toMatchObject({
      callId: 'toolu_sed',
      toolName: 'Bash',
      preview: expect.stringContaining('sed -i'),
      turn: 0,
    });
    expect(sourceOf('notes/old.txt')).toMatchObject({ callId: 'toolu_rm', turn: 1 });
    expect(sourceOf('src/app.ts', 1)).toMatchObject({ callId: 'toolu_more', turn: 2 });
  });

  it('names no tool for a change made when none was running', () => {
    expect(sourceOf('user.txt')).toBeNull();
  });
});
