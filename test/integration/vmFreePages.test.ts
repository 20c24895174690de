import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { findQemu, QemuBackend } from '../../electron/vm/qemuBackend.ts';
import { VmHost } from '../../electron/vm/vmHost.ts';
import { guestRun, vmTestHome, vmUnavailable } from '../helpers/vmTestHome.ts';

// Memory a program in the guest frees goes back to the host: the guest's virtio_balloon driver
// reports free 2 MiB blocks about 2 s after they are freed and QEMU discards them. Without it a
// VM's RSS only grows: here it stayed at 534 MiB after the rm with reporting off.

const noVm = vmUnavailable();
const FILL_MIB = 300;

function rssMiB(pid: number): number {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024;
}

describe.skipIf(noVm !== null)(`freed guest memory${noVm ? ` (skipped: ${noVm})` : ''}`, () => {
  const home = vmTestHome();
  const host = new VmHost({ home, backend: () => new QemuBackend(findQemu()!) });
  afterAll(async () => {
    await host.stopAll();
    home.remove();
  });

  it(`leaves QEMU within seconds after a guest program frees ${FILL_MIB} MiB`, { timeout: 120_000 }, async () => {
    const session = await host.start({ name: null, image: 'minimal', command: ['test'] }, { status: () => {}, progress: () => {} });
    const qemu = session.vmPid!;
    // Pages in tmpfs are the guest's own memory, freed to its allocator by rm.
    const fill = await guestRun(session, ['sh', '-c', `dd if=/dev/zero of=/tmp/fill bs=1M count=${FILL_MIB} 2>&1 && sync`]);
    expect(fill.code, fill.out).toBe(0);
    const filled = rssMiB(qemu);
    expect((await guestRun(session, ['rm', '/tmp/fill'])).code).toBe(0);
    const t0 = Date.now();
    let now = filled;
    while (Date.now() - t0 < 30_000) {
      await new Promise((r) => setTimeout(r, 500));
      now = rssMiB(qemu);
      if (filled - now >= FILL_MIB * 0.8) break;
    }
    expect(filled - now, `QEMU's RSS ${filled.toFixed(0)} MiB with the file, ${now.toFixed(0)} MiB 30 s after rm`).toBeGreaterThanOrEqual(
      FILL_MIB * 0.8,
    );
  });
});
