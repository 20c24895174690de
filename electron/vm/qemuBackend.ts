import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, constants, existsSync, mkdirSync, openSync, readFileSync, writeFileSync, writeSync } from 'node:fs';
import { createConnection, type Socket } from 'node:net';
import { join } from 'node:path';
import { ensurePrivateDir } from '../store/paths.ts';
import { probeAccelerator, tscKhz, type AcceleratorChoice } from './accel.ts';
import type { LaunchSpec, VmBackend, VmExit, VmInstance } from './backend.ts';
import {
  emptyShareCommand,
  hostFacts,
  pidFolderMount,
  planOwnership,
  virtiofsdCommand,
  type EmptyShare,
  type OwnershipPlan,
} from './fileOwnership.ts';

// QEMU's microvm machine with direct kernel boot: no firmware, no PCI, virtio-mmio devices only.
// The agent's port is a virtio-serial port backed by a unix socket QEMU serves; the workspace is
// virtiofs through the virtiofsd that ships with QEMU, run so that what the guest writes there is
// the host user's (fileOwnership.ts). Every child is started under
// `setpriv --pdeathsig KILL`, so it dies with the app even when the app is killed outright.

export const AGENT_PORT_NAME = 'capsem.mux';
const STDERR_TAIL = 4096;

export interface QemuPaths {
  readonly qemu: string;
  readonly virtiofsd: string | null;
  /** `setpriv`, when present, to tie each child's life to the app's. */
  readonly setpriv: string | null;
  /** `unshare`, for an empty share's mount namespace (as root). */
  readonly unshare?: string | null;
}

function onPath(name: string): string | null {
  const found = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
  return found.status === 0 ? found.stdout.trim() || null : null;
}

export function findQemu(env: NodeJS.ProcessEnv = process.env): QemuPaths | null {
  const qemu = env.CAPSEM_QEMU ?? onPath('qemu-system-x86_64');
  if (!qemu || !existsSync(qemu)) return null;
  const virtiofsd =
    [env.CAPSEM_VIRTIOFSD, '/usr/lib/qemu/virtiofsd', '/usr/libexec/virtiofsd'].find((p): p is string => !!p && existsSync(p)) ??
    onPath('virtiofsd');
  return { qemu, virtiofsd, setpriv: onPath('setpriv'), unshare: onPath('unshare') };
}

export interface QemuSockets {
  readonly agentPort: string;
  readonly virtiofs: string | null;
}

export function socketsIn(runDir: string, withWorkspace: boolean): QemuSockets {
  return { agentPort: join(runDir, 'agent.sock'), virtiofs: withWorkspace ? join(runDir, 'virtiofs.sock') : null };
}

const TCG_CPU = 'max,-erms,-fsrm';

/** QEMU's arguments for a launch; pure, so the command line is tested without starting QEMU. */
export function qemuArgs(spec: LaunchSpec, accel: AcceleratorChoice, sockets: QemuSockets, tsc: number | null): string[] {
  const memory = `${spec.memoryMiB}M`;
  const machine = ['microvm', 'x-option-roms=off', 'pit=on', 'pic=on', 'rtc=on'];
  if (sockets.virtiofs) machine.push('memory-backend=mem');
  const cmdline = ['console=ttyS0', 'quiet', 'panic=-1', ...(tsc ? [`tsc_early_khz=${tsc}`] : []), spec.cmdline]
    .filter((s) => s !== '')
    .join(' ');
  const args = [
    // Named threads ("CPU 0/TCG", "IO mon_iothread"...) let a profile tell the vCPUs from QEMU's own I/O.
    '-name',
    'capsem,debug-threads=on',
    '-M',
    machine.join(','),
    '-accel',
    accel.accel,
    // Under TCG the default CPU model has no AES-NI, and TLS in the guest then runs at a few MiB/s.
    // Without ERMS and FSRM the guest's kernel and libc copy memory with wider moves than
    // `rep movsb`, which TCG runs a byte at a time: the agent channel went from 25-30 to 55-95 MiB/s.
    '-cpu',
    accel.accel === 'kvm' ? 'host' : TCG_CPU,
    '-m',
    memory,
    '-smp',
    String(spec.cpus),
    '-nodefaults',
    '-no-user-config',
    '-no-reboot',
    '-display',
    'none',
    '-monitor',
    'none',
    '-serial',
    `file:${spec.serialLog}`,
    '-kernel',
    spec.kernel,
    '-initrd',
    spec.initrd,
    '-append',
    cmdline,
    // libvhost-user (virtiofsd) refuses legacy virtio-mmio devices.
    '-global',
    'virtio-mmio.force-legacy=false',
    '-device',
    'virtio-serial-device,id=vser0',
    '-chardev',
    `socket,id=agent,path=${sockets.agentPort},server=on,wait=off`,
    '-device',
    `virtserialport,bus=vser0.0,chardev=agent,name=${AGENT_PORT_NAME}`,
    // Guest memory a program touched stays resident in QEMU after the guest frees it. With free
    // page reporting the guest's virtio_balloon driver hands free 2 MiB blocks back (QEMU discards
    // them) about 2 s after they are freed; the balloon is never inflated, so the guest keeps all
    // its memory. An idle spare gave back about 70 MiB after its warm-up; the rest of that warm-up's
    // rise is TCG's translated code (about 240 MiB of QEMU's own memory), which the warm-up is for.
    '-device',
    'virtio-balloon-device,free-page-reporting=on',
  ];
  spec.disks.forEach((disk, i) => {
    args.push(
      '-drive',
      `id=disk${i},file=${disk.path},format=raw,if=none${disk.readOnly ? ',readonly=on' : ''}`,
      '-device',
      `virtio-blk-device,drive=disk${i}${disk.serial ? `,serial=${disk.serial}` : ''}`,
    );
  });
  if (sockets.virtiofs) {
    args.push(
      '-object',
      `memory-backend-memfd,id=mem,size=${memory},share=on`,
      '-chardev',
      `socket,id=workspace,path=${sockets.virtiofs}`,
      '-device',
      'vhost-user-fs-device,chardev=workspace,tag=workspace',
    );
  }
  return args;
}

function tail(child: ChildProcess): () => string {
  let text = '';
  child.stderr?.on('data', (c: Buffer) => {
    text = (text + c.toString('utf8')).slice(-STDERR_TAIL);
  });
  return () => text.trim();
}

function spawnTied(paths: QemuPaths, command: string, args: readonly string[]): ChildProcess {
  const [file, argv] = paths.setpriv ? [paths.setpriv, ['--pdeathsig', 'KILL', '--', command, ...args]] : [command, [...args]];
  return spawn(file, argv, { stdio: ['ignore', 'ignore', 'pipe'] });
}

function exitOf(child: ChildProcess, stderr: () => string): Promise<VmExit> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null)
      return resolve({ code: child.exitCode, signal: child.signalCode, stderr: stderr() });
    child.once('exit', (code, signal) => resolve({ code, signal, stderr: stderr() }));
    child.once('error', (err) => resolve({ code: null, signal: null, stderr: `${stderr()}\n${err.message}`.trim() }));
  });
}

async function waitForFile(path: string, timeoutMs: number, gone: Promise<unknown>): Promise<boolean> {
  let ended = false;
  void gone.then(() => (ended = true));
  const until = performance.now() + timeoutMs;
  while (performance.now() < until && !ended) {
    if (existsSync(path)) return true;
    await new Promise((r) => setTimeout(r, 10));
  }
  return existsSync(path);
}

async function stopChild(child: ChildProcess, exited: Promise<VmExit>, graceMs: number): Promise<VmExit> {
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  const exit = await exited;
  clearTimeout(timer);
  return exit;
}

/** The empty share's folder, the binder's FIFO and its results folder, in the VM's run folder. */
function makeEmptyShare(runDir: string): EmptyShare {
  const share: EmptyShare = { dir: join(runDir, 'share'), fifo: join(runDir, 'binder.fifo'), results: join(runDir, 'bound') };
  mkdirSync(share.dir, { mode: 0o755 });
  mkdirSync(share.results, { mode: 0o700 });
  const made = spawnSync('mkfifo', ['-m', '600', share.fifo], { encoding: 'utf8' });
  if (made.status !== 0) throw new Error(`cannot make the share's FIFO ${share.fifo}: ${made.stderr.trim() || made.error?.message}`);
  return share;
}

/** Sends one folder to the binder and waits for its word. */
async function bindIntoShare(share: EmptyShare, source: string, vmEnded: Promise<unknown>): Promise<string> {
  if (/[\n\r]/.test(source)) throw new Error(`a folder whose path holds a line break cannot be shared: ${JSON.stringify(source)}`);
  const name = randomBytes(12).toString('hex');
  // Non-blocking: with no binder reading, the open fails (ENXIO) rather than hang the app.
  const fifo = openSync(share.fifo, constants.O_WRONLY | constants.O_NONBLOCK);
  try {
    writeSync(fifo, `${name} ${source}\n`);
  } finally {
    closeSync(fifo);
  }
  let ended = false;
  void vmEnded.then(() => (ended = true));
  const until = performance.now() + 10_000;
  while (performance.now() < until && !ended) {
    if (existsSync(join(share.results, `${name}.ok`))) return name;
    const failed = join(share.results, `${name}.err`);
    if (existsSync(failed))
      throw new Error(`cannot share ${source} with the VM: ${readFileSync(failed, 'utf8').trim() || 'the bind failed'}`);
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(ended ? `the VM ended before ${source} was shared with it` : `sharing ${source} with the VM took over 10 s`);
}

export class QemuBackend implements VmBackend {
  readonly name = 'qemu';

  constructor(
    private readonly paths: QemuPaths,
    private readonly accelerator: AcceleratorChoice = probeAccelerator(),
    private readonly ownership: OwnershipPlan = planOwnership(hostFacts()),
  ) {}

  private emptySharePaths(): { virtiofsd: string; unshare: string; setpriv: string } {
    const { virtiofsd, setpriv } = this.paths;
    const unshare = this.paths.unshare ?? (this.ownership.kind === 'user-namespace' ? this.ownership.unshare : null);
    if (!virtiofsd || !unshare || !setpriv)
      throw new Error('a VM booted ahead needs virtiofsd, unshare and setpriv (util-linux); install them or turn the spare VM off');
    return { virtiofsd, unshare, setpriv };
  }

  async launch(spec: LaunchSpec): Promise<VmInstance> {
    ensurePrivateDir(spec.runDir);
    // QEMU creates the console log with the umask's mode; the guest's console is the session's data.
    closeSync(openSync(spec.serialLog, 'a', 0o600));
    chmodSync(spec.serialLog, 0o600);
    const shared = spec.workspace !== undefined || spec.emptyShare === true;
    if (shared && !this.paths.virtiofsd)
      throw new Error('virtiofsd was not found (it ships in qemu-system-common as /usr/lib/qemu/virtiofsd); install qemu-system-x86');
    const sockets = socketsIn(spec.runDir, shared);
    const helpers: { child: ChildProcess; exited: Promise<VmExit> }[] = [];
    const emptyShare = spec.emptyShare ? makeEmptyShare(spec.runDir) : null;
    if (shared && sockets.virtiofs) {
      const command = emptyShare
        ? emptyShareCommand(this.ownership, this.emptySharePaths(), sockets.virtiofs, emptyShare, () => pidFolderMount([spec.runDir]))
        : virtiofsdCommand(this.ownership, this.paths.virtiofsd!, sockets.virtiofs, spec.workspace!, () =>
            pidFolderMount([spec.workspace!, spec.runDir]),
          );
      const child = spawnTied(this.paths, command.file, command.args);
      const stderr = tail(child);
      const exited = exitOf(child, stderr);
      helpers.push({ child, exited });
      if (!(await waitForFile(sockets.virtiofs, 5000, exited))) {
        child.kill('SIGKILL');
        const exit = await exited;
        throw new Error(`virtiofsd did not start: ${exit.stderr || `exit ${exit.code ?? exit.signal}`}`);
      }
    }
    const qemu = spawnTied(this.paths, this.paths.qemu, qemuArgs(spec, this.accelerator, sockets, tscKhz()));
    const qemuStderr = tail(qemu);
    const qemuExited = exitOf(qemu, qemuStderr);
    const pids = [qemu.pid, ...helpers.map((h) => h.child.pid)].filter((p): p is number => p !== undefined);
    writeFileSync(join(spec.runDir, 'pids.json'), JSON.stringify({ pids, runDir: spec.runDir }), { mode: 0o600 });
    const exited = qemuExited.then(async (exit) => {
      for (const h of helpers) await stopChild(h.child, h.exited, 1000);
      return exit;
    });
    const accelerator = this.accelerator;
    return {
      accelerator,
      pids,
      exited,
      async connectAgentPort(timeoutMs: number): Promise<Socket> {
        let ended = false;
        void qemuExited.then(() => (ended = true));
        const until = performance.now() + timeoutMs;
        let last: Error | null = null;
        while (performance.now() < until && !ended) {
          try {
            return await new Promise<Socket>((resolve, reject) => {
              const socket = createConnection(sockets.agentPort);
              socket.once('connect', () => resolve(socket));
              socket.once('error', reject);
            });
          } catch (err) {
            last = err as Error;
            await new Promise((r) => setTimeout(r, 10));
          }
        }
        if (ended) {
          const exit = await qemuExited;
          throw new Error(`QEMU exited before its agent port opened: ${exit.stderr || `exit ${exit.code ?? exit.signal}`}`);
        }
        throw new Error(`QEMU's agent port did not open within ${timeoutMs} ms${last ? ` (${last.message})` : ''}`);
      },
      ...(emptyShare ? { bindIntoShare: (source: string) => bindIntoShare(emptyShare, source, qemuExited) } : {}),
      kill: async () => {
        await stopChild(qemu, qemuExited, 2000);
        return exited;
      },
    };
  }
}
