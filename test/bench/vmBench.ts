import { spawn } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { SessionPaths } from '../../electron/store/paths.ts';
import { tscKhz, type AcceleratorChoice } from '../../electron/vm/accel.ts';
import type { GuestImage } from '../../electron/vm/image/guestImage.ts';
import { imageBootPlan } from '../../electron/vm/image/imagePlan.ts';
import { qemuArgs, socketsIn, type QemuPaths } from '../../electron/vm/qemuBackend.ts';
import { DEFAULT_VM_CPUS, type BootPlan, type VmSession } from '../../electron/vm/vmSession.ts';
import { figure, median, percentile, printFigures } from './report.ts';
import { downloadFigures } from './vmDownloadBench.ts';
import { execTimed, MEMORY_MIB, ms, withBenchVms } from './vmHarness.ts';

// Real VMs under QEMU, each figure against a baseline measured in the same run:
//  - session start to the first byte of `echo x`, against a bare QEMU boot of the same kernel and
//    initramfs to init (`capsem.bare=1`: init prints a marker and powers off, init-common.sh);
//  - warm exec round trips of `true`;
//  - guest curl downloads, against the raw channel and TLS inside the guest (vmDownloadBench.ts).
// Images are built once before any timing and kept in <repo>/.cache/images across runs.

const BOOTS = 10;
const EXECS = 60;
const BARE_MARKER = 'capsem-init: bare boot';

/**
 * Launch to init's marker line: the session's QEMU command line (qemuArgs), no workspace, serial
 * on stdout, `capsem.bare=1` so init powers off as soon as it runs.
 */
async function bareBoot(qemu: QemuPaths, accel: AcceleratorChoice, image: GuestImage, runDir: string): Promise<number> {
  mkdirSync(runDir, { recursive: true, mode: 0o700 });
  const args = qemuArgs(
    {
      kernel: image.kernel,
      initrd: image.initrd,
      cmdline: 'capsem.bare=1',
      disks: [],
      memoryMiB: MEMORY_MIB,
      cpus: DEFAULT_VM_CPUS,
      runDir,
      serialLog: '',
    },
    accel,
    socketsIn(runDir, false),
    tscKhz(),
  );
  const serial = args.indexOf('-serial');
  args.splice(serial, 2, '-serial', 'stdio');
  const [file, argv] = qemu.setpriv ? [qemu.setpriv, ['--pdeathsig', 'KILL', '--', qemu.qemu, ...args]] : [qemu.qemu, args];
  const t0 = performance.now();
  const child = spawn(file, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr.on('data', (c: Buffer) => (err = (err + c.toString()).slice(-2000)));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  try {
    return await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`bare boot: no "${BARE_MARKER}" within 90 s\n${out.slice(-1500)}`)), 90_000);
      child.stdout.on('data', (c: Buffer) => {
        out += c.toString('latin1');
        if (out.includes(BARE_MARKER)) {
          clearTimeout(timer);
          resolve(performance.now() - t0);
        }
      });
      void exited.then(() => {
        clearTimeout(timer);
        reject(new Error(`bare boot: QEMU exited (${child.exitCode ?? child.signalCode}) before the marker\n${err}\n${out.slice(-1500)}`));
      });
    });
  } finally {
    // init powers off right after the marker; wait for that so boots never overlap.
    const gone = await Promise.race([exited.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 10_000))]);
    if (!gone) {
      child.kill('SIGKILL');
      await exited;
    }
    rmSync(runDir, { recursive: true, force: true });
  }
}

interface SessionBoot {
  readonly firstOutputMs: number;
  readonly planMs: number;
  readonly readyMs: number;
  /** The session's own boot figures (vm_boot_kernel_ms, vm_boot_init_ms, ...). */
  readonly stages: Readonly<Record<string, string>>;
}

/** Session start through `echo x` to its first byte of output, then an orderly stop (not timed). */
async function sessionBoot(
  start: (plan: (paths: SessionPaths, ca: string) => Promise<BootPlan>) => Promise<VmSession>,
  plan: (paths: SessionPaths, ca: string) => Promise<BootPlan>,
): Promise<SessionBoot> {
  let planMs = 0;
  const t0 = performance.now();
  const session = await start(async (paths, ca) => {
    const t = performance.now();
    const p = await plan(paths, ca);
    planMs = performance.now() - t;
    return p;
  });
  const readyMs = performance.now() - t0;
  try {
    const { stream, result } = session.exec(['echo', 'x']);
    const first = new Promise<number>((resolve) => stream.once('data', () => resolve(performance.now() - t0)));
    const outcome = await result;
    if (outcome.code !== 0 || outcome.stdoutBytes !== 2)
      throw new Error(`echo x in the guest: exit ${outcome.code}, ${outcome.stdoutBytes} bytes of output`);
    return { firstOutputMs: await first, planMs, readyMs, stages: session.boot };
  } finally {
    await session.stop();
  }
}

/** Where a session start goes, p50 of each: plan (image check), kernel, init, agent, ready, first output. */
function stageLine(boots: readonly SessionBoot[]): string {
  const p50 = (key: string): string => ms(median(boots.map((b) => Number(b.stages[key] ?? NaN))));
  return (
    `plan ${ms(median(boots.map((b) => b.planMs)))}, kernel ${p50('vm_boot_kernel_ms')}, init ${p50('vm_boot_init_ms')}, agent ${p50('vm_boot_agent_ms')}, ` +
    `hello ${p50('vm_boot_hello_ms')}, ready ${p50('vm_boot_ready_ms')} (start() ${ms(median(boots.map((b) => b.readyMs)))}) ms`
  );
}

export function vmBench(): Promise<boolean> {
  return withBenchVms('vm', async (vms) => {
    const minimal = await vms.image('minimal');
    await vms.image('agent');
    const minimalPlan = imageBootPlan(vms.home, 'minimal');

    // 1. Boot: alternate bare and session boots, one at a time, after one untimed warm-up of each.
    console.log(`  boots: ${BOOTS} bare and ${BOOTS} session boots of the minimal image, alternating, after a warm-up of each...`);
    const bareRun = join(vms.home.runDir, 'bare');
    await bareBoot(vms.qemu, vms.accel, minimal, bareRun);
    await sessionBoot(vms.start, minimalPlan);
    const bare: number[] = [];
    const ours: SessionBoot[] = [];
    for (let i = 0; i < BOOTS; i++) {
      bare.push(await bareBoot(vms.qemu, vms.accel, minimal, bareRun));
      ours.push(await sessionBoot(vms.start, minimalPlan));
      console.log(`  boot ${i + 1}/${BOOTS}: bare ${ms(bare[i]!)} ms, session to first output ${ms(ours[i]!.firstOutputMs)} ms`);
    }
    const first = ours.map((b) => b.firstOutputMs);
    const bootRatio = percentile(first, 50) / percentile(bare, 50);

    // 2. Warm exec round trips in one running minimal VM.
    console.log(`  warm exec: ${EXECS} x \`true\` in a running minimal VM...`);
    const warm = await vms.start(minimalPlan);
    const execs: number[] = [];
    try {
      for (let i = 0; i < 10; i++) await execTimed(warm, ['true']);
      for (let i = 0; i < EXECS; i++) {
        const r = await execTimed(warm, ['true']);
        if (r.code !== 0) throw new Error(`true in the guest exited ${r.code}: ${r.err}`);
        execs.push(r.ms);
      }
    } finally {
      await warm.stop();
    }

    // 3. Guest downloads, in one agent VM.
    const downloads = await downloadFigures(vms);

    return printFigures(
      `vm: real QEMU (${vms.accel.accel}) boots, execs and transfers, against bare QEMU, the raw channel and TLS inside the guest in the same run`,
      [
        figure('bare boot to init p50 / p95', `${ms(percentile(bare, 50))} / ${ms(percentile(bare, 95))} ms`, true, 'baseline'),
        figure(
          'session to first output p50 / p95',
          `${ms(percentile(first, 50))} / ${ms(percentile(first, 95))} ms = ${bootRatio.toFixed(2)}x bare`,
          bootRatio <= 1.3,
          '<= 1.3x bare p50',
        ),
        figure('  session start, p50 of each', stageLine(ours), true, 'context'),
        figure(
          'warm exec `true` p50 / p95',
          `${percentile(execs, 50).toFixed(1)} / ${percentile(execs, 95).toFixed(1)} ms`,
          percentile(execs, 50) < 50,
          'p50 < 50 ms',
        ),
        ...downloads,
      ],
    );
  });
}
