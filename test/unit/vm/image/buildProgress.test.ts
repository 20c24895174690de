import { describe, expect, it } from 'vitest';
import { BuildStages, type StageReport } from '../../../../electron/vm/image/buildProgress.ts';

describe('BuildStages', () => {
  it('tracks stages running at once, each with its own fraction and time, and sums their spans into the whole', async () => {
    let now = 1000;
    const reports: StageReport<string>[] = [];
    const stages = new BuildStages<string>(
      { packages: 0.5, agents: 0.2, squash: 0.3 },
      (r) => reports.push(r),
      () => now,
    );
    expect(stages.snapshot().map((s) => s.state)).toEqual(['pending', 'pending', 'pending']);
    stages.report('packages', 0.5, 'get');
    now += 2000;
    stages.report('agents', 0.5, 'npm');
    expect(reports.at(-1)).toMatchObject({ stage: 'agents', stageFraction: 0.5, message: 'npm' });
    expect(reports.at(-1)!.fraction).toBeCloseTo(0.5 * 0.5 + 0.2 * 0.5);
    expect(stages.snapshot()).toEqual([
      { stage: 'packages', state: 'running', fraction: 0.5, ms: 2000 },
      { stage: 'agents', state: 'running', fraction: 0.5, ms: 0 },
      { stage: 'squash', state: 'pending', fraction: 0, ms: 0 },
    ]);
    now += 1000;
    stages.done('packages');
    // A late report of a finished stage does not move it back.
    stages.report('packages', 0.9, 'late');
    expect(stages.snapshot()[0]).toEqual({ stage: 'packages', state: 'done', fraction: 1, ms: 3000 });
    await stages.run('squash', 'squashing', (progress) => {
      progress(0.5, 'half');
      now += 500;
    });
    stages.done('agents');
    expect(stages.snapshot()).toEqual([
      { stage: 'packages', state: 'done', fraction: 1, ms: 3000 },
      { stage: 'agents', state: 'done', fraction: 1, ms: 1500 },
      { stage: 'squash', state: 'done', fraction: 1, ms: 500 },
    ]);
    expect(reports.at(-1)!.fraction).toBe(1);
  });

  it('marks a stage that never ran (a reused root file system) skipped', () => {
    const stages = new BuildStages<string>({ rootfs: 1 }, () => {});
    stages.done('rootfs', 'reusing');
    expect(stages.snapshot()).toEqual([{ stage: 'rootfs', state: 'skipped', fraction: 1, ms: 0 }]);
  });
});
