import { mkdirSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AppCore } from '../../electron/app/appCore.ts';
import type { CallResult, EventName, EventPayload } from '../../electron/contract/appContract.ts';
import { capsemHome } from '../../electron/store/paths.ts';
import { VmHost } from '../../electron/vm/vmHost.ts';
import { freePort } from '../helpers/freePort.ts';
import { buildAgent, HostAgentBackend, hostAgentPlan } from '../helpers/hostAgentBackend.ts';
import { runCapsemAsync, USER_FOLDER, type CliResult } from '../helpers/runCapsem.ts';
import { mountSmallDisk, smallDiskUnavailable, type SmallDisk } from '../helpers/smallDisk.ts';
import { vmUnavailable } from '../helpers/vmTestHome.ts';

// A session whose start fails after it was entered in main.db (here: no room for its session.db
// on a real tmpfs that is full) must say why, exit non-zero, and leave no session `running` with
// no database, nor keep its name: the same --name works once there is room. Through the three
// doors that start sessions: `capsem record`, `capsem run` (a real VM) and the app's sessions.start.

const noDisk = smallDiskUnavailable();
const noVm = vmUnavailable();
const noAgent = buildAgent();
const FULL = /the session did not start: cannot open its database \S+session\.db: database or disk is full/;

interface Listed {
  id: string;
  name: string | null;
  status: string;
  statusReason: string | null;
  onDisk: boolean;
}

describe.skipIf(noDisk !== null)(`a start that fails for a full disk${noDisk ? ` (skipped: ${noDisk})` : ''}`, () => {
  let disk: SmallDisk;
  const filler = (): string => join(disk.dir, 'filler');
  const capsem = (args: readonly string[]): Promise<CliResult> => runCapsemAsync(disk.dir, args, {}, { timeoutMs: 60_000 });
  const list = async (): Promise<Listed[]> => JSON.parse((await capsem(['list', '--json'])).stdout) as Listed[];

  const makeRoom = (): void => rmSync(filler(), { force: true });
  /** Leaves 128 KiB free: room for main.db to enter a session, none for a new session.db. */
  const fill = (): void => {
    makeRoom();
    const { bavail, bsize } = statfsSync(disk.dir);
    writeFileSync(filler(), Buffer.alloc(Math.max(0, bavail * bsize - (128 << 10))));
  };

  /** What a failed start must leave: nothing running without a database, the failure said, the name free. */
  const expectNoHalfMadeSession = async (name: string, reason = FULL): Promise<void> => {
    const sessions = await list();
    expect(
      sessions.filter((s) => s.status === 'running'),
      JSON.stringify(sessions),
    ).toEqual([]);
    const failed = sessions.filter((s) => s.name === name);
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ status: 'crashed', onDisk: false });
    expect(failed[0]!.statusReason).toMatch(reason);
  };

  beforeAll(async () => {
    disk = mountSmallDisk(8);
    // The CA and main.db exist, as on any machine that has used capsem before its disk filled.
    const first = await capsem(['record', '--', process.execPath, '-e', '0']);
    expect(first.code, first.stderr).toBe(0);
  }, 60_000);
  afterEach(makeRoom);
  afterAll(() => disk?.unmount());

  it('capsem record says why, exits non-zero, and the same name works once there is room', async () => {
    fill();
    const failed = await capsem(['record', '--name', 'again', '--', process.execPath, '-e', 'console.log("ran")']);
    expect(failed.code).not.toBe(0);
    expect(failed.stdout).not.toContain('ran');
    expect(failed.stderr).toMatch(FULL);
    await expectNoHalfMadeSession('again');

    makeRoom();
    const retried = await capsem(['record', '--name', 'again', '--', process.execPath, '-e', 'console.log("ran")']);
    expect(retried.code, retried.stderr).toBe(0);
    expect(retried.stdout).toBe('ran\n');
    expect((await list()).find((s) => s.name === 'again' && s.status === 'stopped')).toMatchObject({ onDisk: true });
  }, 120_000);

  it('capsem dev seed says why, exits non-zero, and seeds under the same names once there is room', async () => {
    fill();
    const failed = await capsem(['dev', 'seed', '--sessions', '1', '--events', '20']);
    expect(failed.code).not.toBe(0);
    const SEED_FULL = /seeding failed: cannot open its database \S+session\.db: database or disk is full/;
    expect(failed.stderr).toMatch(SEED_FULL);
    await expectNoHalfMadeSession('co-work1', SEED_FULL);

    makeRoom();
    const retried = await capsem(['dev', 'seed', '--sessions', '1', '--events', '20']);
    expect(retried.code, retried.stderr).toBe(0);
    expect(retried.stdout).toMatch(/^[0-9a-f-]{36} {2}co-work1$/m);
  }, 120_000);

  it.skipIf(noVm !== null)(
    `capsem run (a real VM) says why, exits non-zero, and the same name works once there is room${noVm ? ` (skipped: ${noVm})` : ''}`,
    async () => {
      fill();
      const failed = await capsem(['run', '--image', 'minimal', '--name', 'vm-again', '--', 'echo', 'ran']);
      expect(failed.code).not.toBe(0);
      expect(failed.stdout).toBe('');
      expect(failed.stderr).toMatch(FULL);
      await expectNoHalfMadeSession('vm-again');

      makeRoom();
      const retried = await capsem(['run', '--image', 'minimal', '--name', 'vm-again', '--', 'echo', 'ran']);
      expect(retried.code, retried.stderr).toBe(0);
      expect(retried.stdout).toBe('ran\n');
    },
    180_000,
  );

  it.skipIf(noAgent !== null)(
    `the app's sessions.start says why, and the same name works once there is room${noAgent ? ` (skipped: ${noAgent})` : ''}`,
    async () => {
      const home = capsemHome({ CAPSEM_HOME: disk.dir });
      const workspace = join(USER_FOLDER, 'app-workspace');
      mkdirSync(workspace, { recursive: true });
      const proxyPort = await freePort();
      const vmHost = new VmHost({
        home,
        backend: () => new HostAgentBackend(workspace),
        plan: () => async () => hostAgentPlan(workspace, proxyPort, null),
      });
      const core = new AppCore({ home, vmHost, checkResults: true });
      const failures: EventPayload<'session.starting'>[] = [];
      core.subscribe(<N extends EventName>(name: N, payload: EventPayload<N>) => {
        if (name === 'session.starting' && (payload as EventPayload<'session.starting'>).state === 'failed')
          failures.push(payload as EventPayload<'session.starting'>);
      });
      try {
        fill();
        // The id comes back at once; the failure reaches the window as the start's end, and the
        // terminal the tab asks for says why.
        const failed = (await core.handle('sessions.start', { name: 'app-again', image: 'minimal' })) as CallResult<'sessions.start'>;
        await expect(core.handle('terminal.attach', { id: failed.id, size: { cols: 80, rows: 24 } })).rejects.toMatchObject({
          code: 'start_failed',
          message: expect.stringMatching(FULL),
        });
        expect(failures).toEqual([{ id: failed.id, state: 'failed', progress: null, message: expect.stringMatching(FULL) }]);
        const listed = (await core.handle('sessions.list', {})) as CallResult<'sessions.list'>;
        expect(listed.filter((s) => s.status === 'running')).toEqual([]);
        await expectNoHalfMadeSession('app-again');

        makeRoom();
        const { id } = (await core.handle('sessions.start', { name: 'app-again', image: 'minimal' })) as CallResult<'sessions.start'>;
        expect(await core.handle('terminal.attach', { id, size: { cols: 80, rows: 24 } })).toMatchObject({ live: true });
        expect(await core.handle('sessions.info', { id })).toMatchObject({ name: 'app-again', status: 'running', onDisk: true });
        expect(await core.handle('sessions.stop', { id })).toEqual({ status: 'stopped' });
      } finally {
        await vmHost.stopAll();
        core.close();
        rmSync(workspace, { recursive: true, force: true });
      }
    },
    120_000,
  );
});
