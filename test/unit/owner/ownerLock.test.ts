import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { acquireOwnerLock, readOwnerLock, type OwnerRecord } from '../../../electron/owner/ownerLock.ts';
import { ownerPaths } from '../../../electron/owner/ownerPaths.ts';
import { processStartTicks } from '../../../electron/platform/processIdentity.ts';
import { spawnOwnerChild } from '../../helpers/spawnOwnerChild.ts';
import { tempHome } from '../../helpers/tempHome.ts';

const who = { kind: 'cli', command: 'test' } as const;
let home = tempHome();
afterEach(() => {
  home.remove();
  home = tempHome();
});

async function acquired(): Promise<Extract<Awaited<ReturnType<typeof acquireOwnerLock>>, { acquired: true }>> {
  const taken = await acquireOwnerLock(home, who);
  if (!taken.acquired) throw new Error(`lock held by ${taken.holder.pid}`);
  return taken;
}

describe('owner lock', () => {
  it('is created whole and private, refused to a second taker while held, and gone after release', async () => {
    const { lock, tookOver } = await acquired();
    expect(tookOver).toBeNull();
    const path = ownerPaths(home).lock;
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(home.runDir).mode & 0o777).toBe(0o700);
    const onDisk = JSON.parse(readFileSync(path, 'utf8')) as OwnerRecord;
    expect(onDisk).toMatchObject({ pid: process.pid, kind: 'cli', command: 'test', socket: ownerPaths(home).socket });
    expect(Date.parse(onDisk.startedAt)).toBeGreaterThan(0);

    const second = await acquireOwnerLock(home, { kind: 'app', command: 'other' });
    expect(second).toEqual({ acquired: false, holder: onDisk });

    lock.release();
    expect(existsSync(path)).toBe(false);
    expect(readdirSync(home.runDir)).toEqual([]);
    (await acquired()).lock.release();
  });

  it('never removes a lock that is not its own', async () => {
    const { lock } = await acquired();
    const path = ownerPaths(home).lock;
    const someoneElse = { ...lock.record, token: 'someone-else' };
    writeFileSync(path, JSON.stringify(someoneElse));
    lock.release();
    expect(readOwnerLock(home)?.record).toEqual(someoneElse);
  });

  it('takes over the lock of an owner killed with SIGKILL, and says whose it was', async () => {
    const child = spawnOwnerChild(home.root, 'lock');
    expect(JSON.parse(await child.firstLine)).toEqual({ acquired: true });
    const childPid = child.process.pid!;
    child.process.kill('SIGKILL');
    await child.done;
    expect(readOwnerLock(home)?.record?.pid).toBe(childPid);

    const { lock, tookOver } = await acquired();
    expect(tookOver).toMatchObject({ pid: childPid, command: 'ownerChild lock' });
    expect(readOwnerLock(home)?.record?.pid).toBe(process.pid);
    lock.release();
  });

  it("leaves a live owner's lock alone", async () => {
    const child = spawnOwnerChild(home.root, 'lock');
    await child.firstLine;
    const taken = await acquireOwnerLock(home, who);
    expect(taken).toMatchObject({ acquired: false, holder: { pid: child.process.pid, kind: 'cli' } });
    child.process.kill('SIGKILL');
    await child.done;
  });

  it.skipIf(processStartTicks(process.pid) === null)('treats a reused pid as dead: same pid, different start time', async () => {
    const reused = {
      pid: process.pid,
      startedAt: new Date(0).toISOString(),
      kind: 'app',
      command: 'long gone',
      socket: ownerPaths(home).socket,
      procStart: '1',
      token: 'old',
    };
    (await acquired()).lock.release();
    writeFileSync(ownerPaths(home).lock, JSON.stringify(reused));
    const { lock, tookOver } = await acquired();
    expect(tookOver).toEqual(reused);
    lock.release();
  });

  it('takes over a lock file that is not a lock', async () => {
    (await acquired()).lock.release();
    writeFileSync(ownerPaths(home).lock, '{"pid": 1, "trunc');
    const { lock, tookOver } = await acquired();
    expect(tookOver).toBeNull();
    expect(readOwnerLock(home)?.record?.pid).toBe(process.pid);
    lock.release();
  });

  it.each(['SIGTERM', 'SIGINT', 'exit'] as const)('is released when its holder ends by %s', async (how) => {
    const child = spawnOwnerChild(home.root, how === 'exit' ? 'exit' : 'lock');
    await child.firstLine;
    if (how !== 'exit') child.process.kill(how);
    const end = await child.done;
    expect(end.signal).toBe(how === 'exit' ? null : how);
    expect(existsSync(ownerPaths(home).lock)).toBe(false);
  });
});
