import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseWarmUp, WARM_UP_ROOT, WARM_UP_SCRIPT, warmUpCommand } from '../../../electron/vm/agentWarmUp.ts';

const noPython = spawnSync('python3', ['--version']).status !== 0;

/** Runs the guest's script here with `agent` (a shell line) as the agent, in a folder of this test's; `stop` ends its stdin after that many ms. */
function runScript(
  folder: string,
  agent: string,
  options: { marks?: string[]; limitMs?: number; stopMs?: number } = {},
): Promise<{ out: string; err: string; code: number | null }> {
  const files = [{ path: '.agent/settings.json', content: '{}\n' }];
  const child = spawn(
    'python3',
    [
      '-c',
      WARM_UP_SCRIPT,
      folder,
      String(options.limitMs ?? 20_000),
      tmpdir(),
      JSON.stringify(options.marks ?? ['Agent', '────']),
      JSON.stringify(files),
      'sh',
      '-c',
      agent,
    ],
    { stdio: ['pipe', 'pipe', 'pipe'] },
  );
  if (options.stopMs !== undefined) setTimeout(() => child.stdin.end(), options.stopMs);
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ out, err, code })));
}

/** Whether a process carrying `token` in its environment still runs here. */
function carrying(token: string): boolean {
  return spawnSync('sh', ['-c', `grep -l "CAPSEM_WARM_UP=${token}" /proc/[0-9]*/environ 2>/dev/null`], { encoding: 'utf8' }).stdout !== '';
}

describe('the warm-up command', () => {
  it('runs Claude Code in a folder of its own under /tmp, a new one each time, with a placeholder key its settings approve', () => {
    const a = warmUpCommand('claude');
    const b = warmUpCommand('claude');
    const folder = a.argv[3]!;
    expect(folder.startsWith(WARM_UP_ROOT)).toBe(true);
    expect(b.argv[3]).not.toBe(folder);
    expect(a.argv.at(-1)).toBe('claude');
    const key = a.env.ANTHROPIC_API_KEY!;
    expect(key).toMatch(/^sk-ant-.*placeholder/);
    const settings = (JSON.parse(a.argv[7]!) as { path: string; content: string }[]).find((f) => f.path === '.claude.json')!;
    expect(settings.content).toContain(key.slice(-20));
  });

  it('refuses an agent whose prompt it cannot recognise', () => {
    expect(() => warmUpCommand('codex')).toThrow(/prompt is not known/);
  });
});

describe('parseWarmUp', () => {
  it('reads the script’s last line', () => {
    expect(parseWarmUp('noise\n{"outcome": "prompt", "ms": 812}\n', '', 0)).toEqual({
      outcome: 'prompt',
      ms: 812,
      error: null,
      cleaned: true,
    });
    expect(parseWarmUp('{"outcome": "failed", "ms": 3}\n', 'Traceback: boom\n', 0)).toEqual({
      outcome: 'failed',
      ms: 3,
      error: 'Traceback: boom',
      cleaned: true,
    });
  });

  it('without that line it cannot say the folder was removed', () => {
    expect(parseWarmUp('', 'python3: not found\n', 127)).toEqual({ outcome: 'failed', ms: 0, error: 'python3: not found', cleaned: false });
    expect(parseWarmUp('{"outcome": "odd"}', '', 0).cleaned).toBe(false);
  });
});

describe.skipIf(noPython)('the warm-up script (run here, a shell standing in for the agent)', () => {
  let scratch = '';
  afterEach(() => rmSync(scratch, { recursive: true, force: true }));

  it('stops at the prompt, kills the agent and what it left running, and removes its folder', async () => {
    scratch = mkdtempSync(join(tmpdir(), 'capsem-warm-up-test-'));
    const folder = join(scratch, 'run-1a2b3c');
    // The agent writes in its HOME and TMPDIR, leaves a process of its own session behind, then draws its prompt.
    const agent =
      'test -f "$HOME/.agent/settings.json" || exit 9; echo x > "$HOME/made"; echo y > "$TMPDIR/made"; setsid sleep 300 & printf "Agent ready\\n────────\\n"; sleep 300';
    const r = await runScript(folder, agent);
    expect(r.code).toBe(0);
    expect(parseWarmUp(r.out, r.err, r.code)).toMatchObject({ outcome: 'prompt', cleaned: true });
    expect(existsSync(folder)).toBe(false);
    expect(carrying('run-1a2b3c')).toBe(false);
  });

  it('ends when stdin ends (the host’s stop), and at its time limit, removing its folder each time', async () => {
    scratch = mkdtempSync(join(tmpdir(), 'capsem-warm-up-test-'));
    const stopped = await runScript(join(scratch, 'run-stop'), 'sleep 300', { stopMs: 500 });
    expect(parseWarmUp(stopped.out, stopped.err, stopped.code)).toMatchObject({ outcome: 'stopped', cleaned: true });
    const late = await runScript(join(scratch, 'run-late'), 'sleep 300', { limitMs: 500 });
    expect(parseWarmUp(late.out, late.err, late.code)).toMatchObject({ outcome: 'limit', cleaned: true });
    const exited = await runScript(join(scratch, 'run-exit'), 'exit 3');
    expect(parseWarmUp(exited.out, exited.err, exited.code)).toMatchObject({ outcome: 'exited', cleaned: true });
    for (const run of ['run-stop', 'run-late', 'run-exit']) expect(existsSync(join(scratch, run))).toBe(false);
  });
});
