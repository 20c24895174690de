import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { processCpuSeconds, vmCpuUse, untilQuiet } from '../../../electron/vm/vmCpuUse.ts';

// A boot timeout's message says whether the VM ran and got nowhere or never got the CPU.

describe('vmCpuUse', () => {
  it('reads a process that spun as having had CPU, and a sleeping one as having had almost none', async () => {
    const idle = spawn('sleep', ['5']);
    try {
      const spinUntil = Date.now() + 300;
      while (Date.now() < spinUntil);
      expect(processCpuSeconds(process.pid)).toBeGreaterThanOrEqual(0.2);
      expect(processCpuSeconds(idle.pid!)).toBeLessThan(0.1);
    } finally {
      idle.kill();
    }
  });

  it('says what the process had in the time it ran and the host load, or the load alone when the process is gone', () => {
    expect(vmCpuUse(process.pid, 90_000)).toMatch(
      /^the VM's process had \d+\.\d s of CPU in 90\.0 s; the host's load average was \d+\.\d$/,
    );
    expect(vmCpuUse(2 ** 22 + 12345, 90_000)).toMatch(/^the host's load average was \d+\.\d$/);
    expect(vmCpuUse(undefined, 1000)).toMatch(/^the host's load average was/);
  });
});

describe('untilQuiet', () => {
  it('resolves once the process has been quiet for the seconds asked, or at once for a process that has gone', async () => {
    const t0 = performance.now();
    await untilQuiet(process.pid, { maxMs: 10_000, quietSeconds: 1, share: 0.9 });
    expect(performance.now() - t0).toBeLessThan(5_000);
    await untilQuiet(2 ** 22 + 17, { maxMs: 10_000 });
    await untilQuiet(undefined, { maxMs: 10_000 });
  });

  it('waits no longer than maxMs for a busy process', async () => {
    const t0 = performance.now();
    // share 0: never quiet.
    await untilQuiet(process.pid, { maxMs: 1_500, share: 0 });
    expect(performance.now() - t0).toBeLessThan(4_000);
  });
});
