import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanLeftovers } from '../../../electron/vm/leftovers.ts';
import { tempHome } from '../../helpers/tempHome.ts';

// A VM booted ahead whose app was killed leaves run/vms/spare-*: the next owner kills its processes
// (those whose command line names the folder) and removes it, with no session to mark.

describe('cleanLeftovers', () => {
  const home = tempHome();
  afterAll(() => home.remove());

  it("removes a killed app's spare folder and kills the processes it recorded", async () => {
    const dir = join(home.runDir, 'vms', 'spare-0123456789ab');
    mkdirSync(dir, { recursive: true });
    // A stand-in for QEMU: its command line names the folder, as QEMU's does (its agent socket).
    const child = spawn('sh', ['-c', 'sleep 60', join(dir, 'agent.sock')], { stdio: 'ignore' });
    const exited = new Promise((r) => child.once('exit', r));
    writeFileSync(join(dir, 'pids.json'), JSON.stringify({ pids: [child.pid], runDir: dir }));
    const found = cleanLeftovers(home);
    expect(found.killed).toEqual([child.pid]);
    expect(found.sessionsEnded).toEqual([]);
    expect(existsSync(dir)).toBe(false);
    await exited;
  });
});
