import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { findOwner } from '../../electron/owner/ownership.ts';
import { runCapsemAsync, spawnCapsem } from '../helpers/runCapsem.ts';
import { vmTestHome, vmUnavailable } from '../helpers/vmTestHome.ts';

// `capsem shell NAME` on a session that runs in a real VM (the minimal image), from a user's
// folder: a second attachment first draws what the shell's screen held, then goes on live. The
// host keeps that screen as the guest's output built it; before, the second terminal stayed blank
// until the shell printed something new.

const noVm = vmUnavailable();
const home = vmTestHome();
afterAll(() => home.remove());

interface Running {
  readonly child: ChildProcessWithoutNullStreams;
  readonly output: { stdout: string; stderr: string };
  readonly exited: Promise<number | null>;
}

function started(args: readonly string[]): Running {
  const child = spawnCapsem(home.root, args);
  const output = { stdout: '', stderr: '' };
  child.stdout.on('data', (c: Buffer) => (output.stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output.stderr += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return { child, output, exited };
}

async function until<T>(
  what: string,
  probe: () => T | null | undefined | false | Promise<T | null | undefined | false>,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== null && value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`waited ${timeoutMs} ms for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe.skipIf(noVm !== null)(`capsem shell NAME attached again${noVm ? ` (skipped: ${noVm})` : ''}`, () => {
  it('shows what was on the screen, then the live shell', async () => {
    const owner = started(['run', '--image', 'minimal', '--name', 'keep', '--', 'sleep', '600']);
    const clients: Running[] = [];
    try {
      await until(
        'the VM to run',
        async () => {
          const found = await findOwner(home);
          if (!found) return null;
          const live = (await found.client.call('vm.list')) as { name: string | null }[];
          found.client.close();
          return live.some((s) => s.name === 'keep');
        },
        120_000,
      );

      const first = started(['shell', 'keep']);
      clients.push(first);
      first.child.stdin.write('echo "before-$((6*7))"\n');
      await until('the first shell to answer', () => first.output.stdout.includes('before-42'), 30_000);

      // The second attachment takes the shell over: the first one's terminal ends, and the second
      // is drawn with what the screen held, without a key pressed.
      const second = started(['shell', 'keep']);
      clients.push(second);
      expect(await first.exited).toBe(0);
      await until('the screen drawn again', () => second.output.stdout.includes('before-42'), 30_000);
      expect(second.output.stdout).toContain('echo "before-$((6*7))"');
      second.child.stdin.write('echo "after-$((6*8))"\n');
      await until('the second shell to answer', () => second.output.stdout.includes('after-48'), 30_000);

      const stop = await runCapsemAsync(home.root, ['stop', 'keep']);
      expect(stop.code, stop.stderr).toBe(0);
      expect(await owner.exited).not.toBe(null);
    } finally {
      for (const c of clients) c.child.kill('SIGKILL');
      owner.child.kill('SIGKILL');
    }
  }, 240_000);
});
