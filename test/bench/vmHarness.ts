import type { SessionPaths } from '../../electron/store/paths.ts';
import { probeAccelerator, type AcceleratorChoice } from '../../electron/vm/accel.ts';
import { agentBinary } from '../../electron/vm/agentBinary.ts';
import { ensureImage, verifyImage, type GuestImage, type ImageKind } from '../../electron/vm/image/guestImage.ts';
import { findQemu, QemuBackend, type QemuPaths } from '../../electron/vm/qemuBackend.ts';
import { VmSession, type BootPlan } from '../../electron/vm/vmSession.ts';
import { IMAGE_CACHE, vmTestHome, vmUnavailable } from '../helpers/vmTestHome.ts';

// What the VM benchmarks share: a throwaway home with the cached images, sessions started one at
// a time and all stopped at the end, and a command timed by its output.

export const MEMORY_MIB = 1024;

export const mib = (bytes: number, ms: number): number => bytes / (1 << 20) / (ms / 1000);
export const ms = (v: number): string => v.toFixed(0);

export type BootPlanner = (paths: SessionPaths, ca: string) => Promise<BootPlan>;

export interface BenchSessionOptions {
  readonly hostEnv?: NodeJS.ProcessEnv;
  /** Shared at /workspace, recorded as a session with a workspace is (its baseline first). */
  readonly projectFolder?: string;
}

export interface BenchVms {
  readonly qemu: QemuPaths;
  readonly accel: AcceleratorChoice;
  readonly home: ReturnType<typeof vmTestHome>;
  /** Builds (or finds cached) an image before any timing, printing build progress. */
  readonly image: (kind: ImageKind) => Promise<GuestImage>;
  readonly start: (plan: BootPlanner, options?: BenchSessionOptions) => Promise<VmSession>;
}

/** Runs `body` with real VMs, or prints why it cannot and passes; every session it started is stopped after. */
export async function withBenchVms(name: string, body: (vms: BenchVms) => Promise<boolean>): Promise<boolean> {
  const qemu = findQemu();
  const unavailable = vmUnavailable() ?? (qemu ? null : 'qemu-system-x86_64 is not installed');
  if (unavailable || !qemu) {
    console.log(`\n== ${name}: skipped: ${unavailable}`);
    return true;
  }
  const accel = probeAccelerator();
  const home = vmTestHome();
  const backend = new QemuBackend(qemu, accel);
  const live = new Set<VmSession>();
  const agent = agentBinary();
  try {
    console.log(`  accelerator: ${accel.reason}; images cached in ${IMAGE_CACHE}`);
    return await body({
      qemu,
      accel,
      home,
      image: (kind) => prepareImage(home, kind, agent),
      start: (plan, { hostEnv, projectFolder } = {}) =>
        VmSession.start({ home, command: ['bench'], backend, plan, hostEnv, projectFolder, memoryMiB: MEMORY_MIB }).then((s) => {
          live.add(s);
          void s.ended.then(() => live.delete(s));
          return s;
        }),
    });
  } finally {
    await Promise.all([...live].map((s) => s.stop()));
    home.remove();
  }
}

async function prepareImage(home: Parameters<typeof ensureImage>[0], kind: ImageKind, agent: string): Promise<GuestImage> {
  const t = performance.now();
  let lastStage = '';
  let lastTenth = -1;
  const image = await ensureImage(home, kind, {
    agentBinary: agent,
    onProgress: (p) => {
      const tenth = Math.floor(p.fraction * 10);
      if (p.stage === lastStage && tenth === lastTenth) return;
      if (p.stage !== 'inputs' && p.stage !== 'cache')
        console.log(`  ${kind} image: ${String(Math.round(p.fraction * 100)).padStart(3)}% ${p.stage}: ${p.message}`);
      lastStage = p.stage;
      lastTenth = tenth;
    },
  });
  const verified = await verifyImage(image);
  console.log(`  ${kind} image ${verified.dir} ready (${((performance.now() - t) / 1000).toFixed(1)} s)`);
  return verified;
}

export interface TimedExec {
  readonly ms: number;
  readonly outputMs: number;
  readonly out: string;
  readonly err: string;
  readonly code: number | null;
  readonly stdoutBytes: number;
}

/** A command's run, timed from the exec request to its exit; `outputMs` from its first byte of output to its exit. */
export async function execTimed(session: VmSession, argv: string[]): Promise<TimedExec> {
  const t = performance.now();
  const { stream, result } = session.exec(argv);
  let first: number | null = null;
  let out = '';
  let err = '';
  stream.on('data', (c: Buffer) => {
    first ??= performance.now();
    if (out.length < 4096) out += c.toString('latin1');
  });
  stream.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const r = await result;
  const end = performance.now();
  return { ms: end - t, outputMs: end - (first ?? t), out, err, code: r.code, stdoutBytes: r.stdoutBytes };
}
