import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ContentStore, contentHash } from '../changes/contentStore.ts';
import { MODE_EXECUTABLE, MODE_FILE } from '../changes/workspaceEntry.ts';
import type { FileVersion } from '../changes/workspaceEntry.ts';
import { FsEventRows } from '../recording/fsEventRows.ts';
import type { SessionWriter } from '../store/sessionWriter.ts';
import type { SessionRecorder } from '../recording/sessionRecorder.ts';
import { openMainDb } from '../store/mainDb.ts';
import { sessionPaths, type CapsemHome } from '../store/paths.ts';
import type { SessionRecord } from '../store/registry.ts';
import { ClaudeCodeConversation, type ToolResult } from './claudeCodeWire.ts';
import type { SeedToolCall } from './modelWire.ts';
import { recordSeededSession } from './seedSessions.ts';
import { claudeCodeExchange } from './seedStory.ts';

// A Claude Code session that changed its workspace folder, for the Files view, `capsem diff` and
// `capsem revert`: a small project as its baseline, then two prompts whose Edit, Write and Bash
// calls change files (each change at a moment its tool was running), and a file the user added at
// the shell afterwards. The folder on disk (the session's own workspace folder) ends as the
// recording says, so a revert has something to put back. Deterministic.

const BASELINE: Record<string, { content: string; mode?: number }> = {
  'package.json': { content: '{\n  "name": "retry-kit",\n  "version": "1.0.0",\n  "scripts": { "test": "node --test" }\n}\n' },
  'README.md': { content: '# retry-kit\n\nRetries a request up to five times.\n\nUsage: `retry(fn)`.\n' },
  'src/retry.ts': {
    content:
      'export const BUDGET = 5;\n\nexport async function retry<T>(fn: () => Promise<T>): Promise<T> {\n  for (let attempt = 1; ; attempt++) {\n    try {\n      return await fn();\n    } catch (err) {\n      if (attempt > BUDGET) throw err;\n    }\n  }\n}\n',
  },
  'src/legacy.ts': { content: '// Kept for the old API.\nexport const legacy = true;\n' },
  'scripts/release.sh': { content: '#!/bin/sh\nset -e\nnpm test\nnpm publish\n', mode: MODE_EXECUTABLE },
};

class ChangesScript {
  private readonly rows = new FsEventRows();
  private clock: number;
  private ids = 0;

  constructor(
    private readonly recorder: SessionRecorder,
    private readonly writer: SessionWriter,
    private readonly store: ContentStore,
    private readonly root: string,
    start: number,
  ) {
    this.clock = start;
  }

  baseline(): void {
    const versions: [string, FileVersion][] = [];
    for (const [path, file] of Object.entries(BASELINE)) {
      const version = this.put(path, file.content, file.mode ?? MODE_FILE);
      versions.push([path, version]);
      this.writer.append('workspace_files', {
        path,
        size: Buffer.byteLength(file.content),
        mode: version.mode,
        hash: version.hash,
        note: null,
      });
    }
    this.rows.seed(versions);
  }

  private put(path: string, content: string, mode: number): FileVersion {
    const full = join(this.root, path);
    mkdirSync(dirname(full), { recursive: true });
    writeFileSync(full, content);
    chmodSync(full, mode === MODE_EXECUTABLE ? 0o755 : 0o644);
    const bytes = Buffer.from(content);
    return { hash: this.store.put(bytes, contentHash(bytes)), mode };
  }

  /** A file the running tool writes, now. */
  write(path: string, content: string, mode = MODE_FILE): void {
    const content_ = this.put(path, content, mode);
    this.fs({ action: 'modified', path, size: Buffer.byteLength(content), is_dir: false, ts_ms: this.tick(), content: content_ });
  }

  remove(path: string): void {
    rmSync(join(this.root, path), { force: true });
    this.fs({ action: 'deleted', path, size: null, is_dir: false, ts_ms: this.tick() });
  }

  private fs(change: Parameters<FsEventRows['take']>[0][number]): void {
    for (const row of this.rows.take([change])) this.writer.append('fs_events', row);
  }

  private tick(): number {
    this.clock += 150;
    return this.clock;
  }

  tool(name: string, args: Record<string, unknown>): SeedToolCall {
    return { id: `toolu_01chg${(++this.ids).toString(36).padStart(18, '0')}`, name, args: JSON.stringify(args) };
  }

  /** One model call of `agent`; a tool-asking answer's tools run from its end until the next call. */
  call(agent: ClaudeCodeConversation, text: string, tools: readonly SeedToolCall[] = []): void {
    const call = agent.call({ text, tools, usage: { input: 4_000, output: 300, cacheRead: 20_000, cacheWrite: 0 } });
    const durationMs = 2_000;
    void this.recorder.record(claudeCodeExchange(call, new Date(this.clock), durationMs));
    this.clock += durationMs + 50;
  }

  /** The tools' results go back: the next call starts a moment after the last change. */
  results(agent: ClaudeCodeConversation, results: readonly ToolResult[]): void {
    this.clock += 300;
    agent.results(results);
  }

  /** The user, at the shell, with no tool running. */
  later(ms: number): void {
    this.clock += ms;
  }
}

function play(script: ChangesScript): void {
  script.baseline();
  const main = new ClaudeCodeConversation().say('The retry budget is off by one and the README says five; make it three.');
  const read = script.tool('Read', { file_path: '/workspace/src/retry.ts' });
  script.call(main, 'Let me read the retry loop.', [read]);
  script.results(main, [{ id: read.id, content: BASELINE['src/retry.ts']!.content }]);
  const edit = script.tool('Edit', { file_path: '/workspace/src/retry.ts', old_string: 'BUDGET = 5', new_string: 'BUDGET = 3' });
  const fix = script.tool('Edit', {
    file_path: '/workspace/src/retry.ts',
    old_string: 'attempt > BUDGET',
    new_string: 'attempt >= BUDGET',
  });
  script.call(main, 'The loop tries one time too many. Fixing the budget and the bound.', [edit, fix]);
  script.write('src/retry.ts', BASELINE['src/retry.ts']!.content.replace('BUDGET = 5', 'BUDGET = 3'));
  script.write(
    'src/retry.ts',
    BASELINE['src/retry.ts']!.content.replace('BUDGET = 5', 'BUDGET = 3').replace('attempt > BUDGET', 'attempt >= BUDGET'),
  );
  script.results(main, [
    { id: edit.id, content: 'The file src/retry.ts has been updated.' },
    { id: fix.id, content: 'The file src/retry.ts has been updated.' },
  ]);
  const sed = script.tool('Bash', {
    command: "sed -i 's/up to five times/up to three times/' README.md && npm test",
    description: 'Update README and run tests',
  });
  script.call(main, 'Updating the README to match and running the tests.', [sed]);
  script.write('README.md', BASELINE['README.md']!.content.replace('up to five times', 'up to three times'));
  script.results(main, [{ id: sed.id, content: '# tests 4\n# pass 4' }]);
  script.call(main, 'The budget is three attempts now, the README says so, and the tests pass.');

  main.say('Add a changelog entry and drop the legacy module.');
  const write = script.tool('Write', { file_path: 'CHANGELOG.md', content: '...' });
  const rm = script.tool('Bash', {
    command: 'git rm -q src/legacy.ts && chmod -x scripts/release.sh',
    description: 'Remove legacy module',
  });
  script.call(main, 'Writing the changelog and removing the legacy module.', [write, rm]);
  script.write('CHANGELOG.md', '# Changelog\n\n## 1.0.1\n\n- The retry budget is three attempts (it was five, and one more by mistake).\n');
  script.remove('src/legacy.ts');
  script.write('scripts/release.sh', BASELINE['scripts/release.sh']!.content);
  script.results(main, [
    { id: write.id, content: 'File created successfully at: CHANGELOG.md' },
    { id: rm.id, content: '' },
  ]);
  script.call(main, 'Done: CHANGELOG.md has the entry and src/legacy.ts is gone.');
  script.later(120_000);
  script.write('notes.txt', 'Ask about the 2.0 API before releasing.\n');
}

/** Records the session into `home`, ended, with its workspace folder as the changes left it. */
export async function seedChangesSession(home: CapsemHome, name: string | null = null): Promise<SessionRecord> {
  const mainDb = openMainDb(home);
  const store = ContentStore.open(home);
  try {
    const start = Date.now() - 3_600_000;
    const registration = { name, createdAt: new Date(start).toISOString(), crashed: false };
    return await recordSeededSession(home, mainDb, registration, (recorder, writer, record) => {
      play(new ChangesScript(recorder, writer, store, sessionPaths(home, record.id).workspaceDir, start));
      return Promise.resolve();
    });
  } finally {
    store.close();
    mainDb.close();
  }
}
