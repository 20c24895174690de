import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { commandOutput } from '../../../electron/cli/commandOutput.ts';

// A VM command's stdout over a real pipe: a reader that does not read makes writes wait (the
// caller holds the control connection meanwhile), and a reader that goes away breaks the output
// once, without an unhandled EPIPE.

/** A pipe into a process that never reads it, like `capsem run ... | sleep 60`. */
function stalledReader() {
  const reader = spawn('sleep', ['60'], { stdio: ['pipe', 'ignore', 'ignore'] });
  return { pipe: reader.stdin, kill: () => reader.kill('SIGKILL') };
}

describe('command output', () => {
  it('makes a write to a full pipe wait, then ends the wait and reports a broken pipe once the reader goes away', async () => {
    const out = stalledReader();
    const err = stalledReader();
    const output = commandOutput(out.pipe, err.pipe);
    let broken = false;
    void output.broken.then(() => (broken = true));
    const chunk = Buffer.alloc(64 * 1024);
    let wait: Promise<void> | undefined;
    let written = 0;
    while (!(wait = output.stdout(chunk))) written += chunk.length;
    // The pipe's own buffer and Node's, no more: the rest waits with the caller.
    expect(written).toBeLessThan(4 * 1024 * 1024);
    out.kill();
    await wait;
    await expect.poll(() => broken).toBe(true);
    expect(output.stdout(chunk)).toBeUndefined();
    err.kill();
  });

  it('keeps a broken stderr quiet and does not take it for a broken stdout', async () => {
    const out = stalledReader();
    const err = stalledReader();
    const output = commandOutput(out.pipe, err.pipe);
    let broken = false;
    void output.broken.then(() => (broken = true));
    err.kill();
    const chunk = Buffer.alloc(64 * 1024);
    let wait: Promise<void> | undefined;
    while (!(wait = output.stderr(chunk)));
    await wait;
    expect(output.stderr(chunk)).toBeUndefined();
    expect(broken).toBe(false);
    out.kill();
  });
});
