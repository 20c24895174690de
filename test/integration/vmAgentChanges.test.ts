import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSessionChanges } from '../../electron/cli/sessionChanges.ts';
import { readTimeline } from '../../electron/sessions/timeline.ts';
import { capsemHome } from '../../electron/store/paths.ts';
import { anthropicAnswer, hasToolResult, json, startUpstream, type AnthropicBody, type Upstream } from '../helpers/mockUpstreams.ts';
import { runCapsemAsync, USER_FOLDER } from '../helpers/runCapsem.ts';
import { tempHome } from '../helpers/tempHome.ts';
import { agentImageUnavailable, vmTestHome } from '../helpers/vmTestHome.ts';

// Issue #31 end to end: the real Claude Code of the agent image, unmodified, in a real VM, edits
// one file of the user's project with its Edit tool and another with a Bash `sed`. Each change
// must be recorded with its content before and after, attributed to the tool call that made it;
// `capsem diff` applied to a copy of the project as it was must give the project as it is, byte
// for byte; `capsem revert --turn N` must put the project back as it was before turn N.

const noAgentImage = agentImageUnavailable();
const NO_KEYS = { ANTHROPIC_API_KEY: '', OPENAI_API_KEY: '', GEMINI_API_KEY: '', GOOGLE_API_KEY: '' };
const MODEL = 'claude-sonnet-4-6';
const SIDE_CALL = /most recent action in 3-5 words|The user stepped away and is coming back/;

const READ_CALL = 'toolu_changes_read_1';
const EDIT_CALL = 'toolu_changes_edit_1';
const SED_CALL = 'toolu_changes_sed_1';

const APP_BEFORE = "export function greet(name: string): string {\n  return 'Hello, ' + name;\n}\n";
const APP_AFTER = 'export function greet(name: string): string {\n  return `Hello, ${name}!`;\n}\n';
const NOTES_BEFORE = 'alpha one\nalpha two\ngamma\n';
const NOTES_AFTER = 'beta one\nbeta two\ngamma\n';

type Body = AnthropicBody;

/** The script: Read app.ts (Edit refuses a file not read), Edit it, sed notes.txt, and end. */
function script(req: IncomingMessage, raw: unknown, res: ServerResponse): void {
  if (!req.url?.startsWith('/v1/messages') || req.url.startsWith('/v1/messages/count_tokens'))
    return json(res, 404, { type: 'error', error: { type: 'not_found_error', message: 'not here' } });
  const body = (typeof raw === 'object' && raw !== null ? raw : {}) as Body;
  const said = JSON.stringify(body.messages ?? []);
  const tools = (body.tools ?? []).map((t) => t.name);
  if (tools.length === 0 || SIDE_CALL.test(said.slice(-2000)))
    return anthropicAnswer(res, body, 'Editing files', [], { input: 300, output: 5 });
  if (!hasToolResult(body) || !said.includes(READ_CALL))
    return anthropicAnswer(
      res,
      body,
      'Reading the greeting.',
      [{ id: READ_CALL, name: 'Read', input: { file_path: '/workspace/src/app.ts' } }],
      {
        input: 1000,
        output: 20,
      },
    );
  if (!said.includes(EDIT_CALL))
    return anthropicAnswer(
      res,
      body,
      'Making the greeting a template.',
      [
        {
          id: EDIT_CALL,
          name: 'Edit',
          input: { file_path: '/workspace/src/app.ts', old_string: "return 'Hello, ' + name;", new_string: 'return `Hello, ${name}!`;' },
        },
      ],
      { input: 1200, output: 40 },
    );
  if (!said.includes(SED_CALL))
    return anthropicAnswer(
      res,
      body,
      'Renaming alpha in the notes.',
      [{ id: SED_CALL, name: 'Bash', input: { command: "sed -i 's/alpha/beta/' notes.txt", description: 'Rename alpha to beta' } }],
      { input: 1400, output: 30 },
    );
  return anthropicAnswer(res, body, 'Done: the greeting and the notes are updated.', [], { input: 1600, output: 12 });
}

/** Every file under `dir` (relative path → bytes), .git/ left out. */
function tree(dir: string): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (at: string): void => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      const full = join(at, entry.name);
      if (entry.name === '.git') continue;
      if (entry.isDirectory()) walk(full);
      else if (statSync(full).isFile()) files.set(relative(dir, full), readFileSync(full).toString('base64'));
    }
  };
  walk(dir);
  return new Map([...files].sort(([a], [b]) => (a < b ? -1 : 1)));
}

function writeProject(dir: string): void {
  mkdirSync(join(dir, 'src'), { recursive: true });
  writeFileSync(join(dir, 'src', 'app.ts'), APP_BEFORE);
  writeFileSync(join(dir, 'notes.txt'), NOTES_BEFORE);
  writeFileSync(join(dir, 'README.md'), '# demo\n');
}

describe.skipIf(noAgentImage !== null)(
  `Claude Code's Edit and Bash sed, recorded as diffs and undone, in a real VM${noAgentImage ? ` (skipped: ${noAgentImage})` : ''}`,
  () => {
    const home = vmTestHome();
    const project = join(USER_FOLDER, 'changes-project');
    const scratch = mkdtempSync(join(tmpdir(), 'capsem-changes-'));
    let anthropic: Upstream;
    let env: NodeJS.ProcessEnv;

    beforeAll(async () => {
      rmSync(project, { recursive: true, force: true });
      writeProject(project);
      const upHome = tempHome();
      anthropic = await startUpstream(upHome, ['api.anthropic.com'], script);
      upHome.remove();
      const caFile = join(home.root, 'upstream-ca.pem');
      writeFileSync(caFile, anthropic.caPem);
      env = { ...NO_KEYS, CAPSEM_RESOLVE: `api.anthropic.com:443=127.0.0.1:${anthropic.port}`, CAPSEM_UPSTREAM_CA_FILE: caFile };
    });
    afterAll(async () => {
      await anthropic?.close();
      home.remove();
      rmSync(project, { recursive: true, force: true });
      rmSync(scratch, { recursive: true, force: true });
    });

    it('records both edits with their contents and tool calls; capsem diff reproduces the tree; capsem revert --turn undoes it', async () => {
      const baseline = tree(project);
      const started = Date.now();
      const r = await runCapsemAsync(
        home.root,
        [
          'run',
          '--agent',
          'claude',
          '--name',
          'edits',
          '--workspace',
          project,
          '--',
          '-p',
          'Tidy the greeting and the notes.',
          '--allowedTools',
          'Read,Edit,Bash',
          '--model',
          MODEL,
        ],
        { ...env, ANTHROPIC_API_KEY: 'sk-ant-api03-capsem-test-key-0123456789' },
        { timeoutMs: 600_000 },
      );
      console.log(`Claude Code edits run: ${((Date.now() - started) / 1000).toFixed(1)} s`);
      expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
      expect(readFileSync(join(project, 'src', 'app.ts'), 'utf8')).toBe(APP_AFTER);
      expect(readFileSync(join(project, 'notes.txt'), 'utf8')).toBe(NOTES_AFTER);
      const final = tree(project);

      // The patch, applied to the project as it was, gives the project as it is.
      const patch = await runCapsemAsync(home.root, ['diff', 'edits']);
      expect(patch.code, patch.stderr).toBe(0);
      const copy = join(scratch, 'copy');
      rmSync(copy, { recursive: true, force: true });
      writeProject(copy);
      expect(tree(copy)).toEqual(baseline);
      const patchFile = join(scratch, 'edits.patch');
      writeFileSync(patchFile, patch.stdout);
      const applied = spawnSync('git', ['apply', '--verbose', patchFile], { cwd: copy, encoding: 'utf8' });
      expect(applied.status, `${applied.stderr}\n${patch.stdout}`).toBe(0);
      expect(tree(copy)).toEqual(final);

      // Each change is tied to the tool call that made it: the Edit to app.ts, the sed to notes.txt.
      const opened = openSessionChanges(capsemHome({ CAPSEM_HOME: home.root }), 'edits');
      let editTurn: number;
      try {
        const changes = opened.changes.page(opened.session, opened.ended, opened.store, {
          offset: 0,
          limit: 500,
          turn: null,
          path: null,
        }).changes;
        const shown = JSON.stringify(
          { changes: changes.map((c) => [c.seq, c.at, c.path, c.source]), tools: readTimeline(opened.session.store, true).tools },
          null,
          1,
        );
        const app = changes.filter((c) => c.path === 'src/app.ts');
        const notes = changes.filter((c) => c.path === 'notes.txt');
        expect(app.length, shown).toBeGreaterThan(0);
        expect(notes.length, shown).toBeGreaterThan(0);
        expect(
          app.every((c) => c.source?.callId === EDIT_CALL && c.source.toolName === 'Edit'),
          shown,
        ).toBe(true);
        expect(
          notes.every((c) => c.source?.callId === SED_CALL && c.source.toolName === 'Bash'),
          shown,
        ).toBe(true);
        expect(
          [...app, ...notes].every((c) => c.diffable),
          shown,
        ).toBe(true);
        editTurn = app[0]!.source!.turn;
        expect(notes[0]!.source!.turn, shown).toBeGreaterThan(editTurn);
      } finally {
        opened.close();
      }
      const turnPatch = await runCapsemAsync(home.root, ['diff', 'edits', '--turn', String(editTurn)]);
      expect(turnPatch.stdout).toContain("-  return 'Hello, ' + name;\n+  return `Hello, ${name}!`;");
      expect(turnPatch.stdout).not.toContain('notes.txt');

      // Reverting the Edit's turn puts the project back as it was before it, both files.
      const reverted = await runCapsemAsync(home.root, ['revert', 'edits', '--turn', String(editTurn)]);
      expect(reverted.code, `${reverted.stdout}\n${reverted.stderr}`).toBe(0);
      expect(reverted.stdout).toContain('restored "src/app.ts"');
      expect(tree(project)).toEqual(baseline);
    }, 900_000);
  },
);
