import { spawn } from 'node:child_process';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { commandOutput, OutputGone } from '../../../electron/cli/commandOutput.ts';

// The CLI's stdout over a real pipe: a reader that does not read makes writes wait (the caller
// holds the control connection, or its next rows, meanwhile), and a reader that goes away breaks
// the output once, without an unhandled EPIPE; a device that is full breaks it with its own exit
// status and a line to say.

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

  it('tells a reader gone (141, nothing to say) from a write that failed (1, with the reason), and stops a sender at its next write', async () => {
    const out = stalledReader();
    const piped = commandOutput(out.pipe, new Writable({ write: (_c, _e, done) => done() }));
    out.kill();
    const chunk = Buffer.alloc(64 * 1024);
    await expect(
      (async () => {
        for (;;) await piped.send(chunk.toString());
      })(),
    ).rejects.toBeInstanceOf(OutputGone);
    expect(await piped.broken).toEqual({ exitCode: 141, message: null });

    const full = new Writable({
      write: (_c, _e, done) => done(Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' })),
    });
    const devFull = commandOutput(full, new Writable({ write: (_c, _e, done) => done() }));
    await expect(devFull.send('a line\n')).rejects.toMatchObject({ loss: { exitCode: 1 } });
    expect(devFull.loss()).toEqual({ exitCode: 1, message: 'cannot write the output: ENOSPC: no space left on device, write' });
    expect(devFull.stdout('more\n')).toBeUndefined();
  });

  it('shares one wait among the writes made while the pipe is full', () => {
    const out = stalledReader();
    const output = commandOutput(out.pipe, new Writable({ write: (_c, _e, done) => done() }));
    const chunk = Buffer.alloc(64 * 1024);
    let wait: Promise<void> | undefined;
    while (!(wait = output.stdout(chunk)));
    const waits = new Set(Array.from({ length: 50 }, () => output.stdout(chunk)));
    expect(waits).toEqual(new Set([wait]));
    // One listener of ours per event, however many writes wait: no MaxListenersExceededWarning.
    expect(out.pipe.listenerCount('drain')).toBe(1);
    out.kill();
  });
});
