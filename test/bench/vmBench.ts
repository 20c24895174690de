import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { createServer as createPlainServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { CertificateAuthority } from '../../electron/proxy/certificateAuthority.ts';
import type { SessionPaths } from '../../electron/store/paths.ts';
import { probeAccelerator, tscKhz, type AcceleratorChoice } from '../../electron/vm/accel.ts';
import { agentBinary } from '../../electron/vm/agentBinary.ts';
import { ensureImage, verifyImage, type GuestImage, type ImageKind } from '../../electron/vm/image/guestImage.ts';
import { guestCipherOrder } from '../../electron/vm/guestCrypto.ts';
import { imageBootPlan } from '../../electron/vm/image/imagePlan.ts';
import { findQemu, QemuBackend, qemuArgs, socketsIn, type QemuPaths } from '../../electron/vm/qemuBackend.ts';
import { DEFAULT_VM_CPUS, VmSession, type BootPlan } from '../../electron/vm/vmSession.ts';
import { tempHome } from '../helpers/tempHome.ts';
import { IMAGE_CACHE, vmTestHome, vmUnavailable } from '../helpers/vmTestHome.ts';
import { figure, median, percentile, printFigures } from './report.ts';

// Real VMs under QEMU, each figure against a baseline measured in the same run:
//  - session start to the first byte of `echo x`, against a bare QEMU boot of the same kernel and
//    initramfs to init (`capsem.bare=1`: init prints a marker and powers off, init-common.sh);
//  - warm exec round trips of `true`;
//  - a guest curl download through the recording proxy, against the raw agent channel (exec
//    output of `head -c` from /dev/zero), in the same VM; the same download over plain HTTP
//    beside it tells the proxy's path from the guest's own TLS. Both are timed as transfers: the
//    download by curl's own clock (proxy connect, TLS, request and body), the channel from its
//    first byte of output to its end, so neither counts a process start (curl's takes about half
//    a second under TCG; the download timed with it is printed beside).
// Images are built once before any timing and kept in <repo>/.cache/images across runs.

const BOOTS = 10;
const EXECS = 60;
const TRANSFERS = 5;
const BYTES = 64 << 20;
const HOST = 'download.bench.test';
const BARE_MARKER = 'capsem-init: bare boot';
const MEMORY_MIB = 1024;

const mib = (bytes: number, ms: number): number => bytes / (1 << 20) / (ms / 1000);
const ms = (v: number): string => v.toFixed(0);

/** CPU time, in clock ticks, that the whole host has spent busy (neither idle nor waiting on I/O). */
function hostBusyTicks(): number {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  return fields.reduce((a, b) => a + b, 0) - fields[3]! - fields[4]!;
}

/** Starts counting; the returned function gives how many of the host's cores were busy on average since (100 ticks a second). */
function hostCoresBusyFrom(): () => number {
  const ticks = hostBusyTicks();
  const t = performance.now();
  return () => (hostBusyTicks() - ticks) / ((performance.now() - t) / 10);
}

/** A duration as the shell's `times` prints it ("1m2.500s"), in seconds; NaN for anything else. */
function shellSeconds(text: string): number {
  const m = /^(\d+)m([\d.]+)s$/.exec(text);
  return m ? Number(m[1]) * 60 + Number(m[2]) : NaN;
}

function skip(reason: string): boolean {
  console.log(`\n== vm: skipped: ${reason}`);
  return true;
}

/** Builds (or finds cached) the image before any timing, printing build progress. */
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

/** A command's run, timed from the exec request to its exit; `outputMs` from its first byte of output to its exit. */
async function execTimed(
  session: VmSession,
  argv: string[],
): Promise<{ ms: number; outputMs: number; out: string; err: string; code: number | null; stdoutBytes: number }> {
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

/** Where a session start goes, p50 of each: plan (image check), kernel, init, agent, ready, first output. */
function stageLine(boots: readonly SessionBoot[]): string {
  const p50 = (key: string): string => ms(median(boots.map((b) => Number(b.stages[key] ?? NaN))));
  return (
    `plan ${ms(median(boots.map((b) => b.planMs)))}, kernel ${p50('vm_boot_kernel_ms')}, init ${p50('vm_boot_init_ms')}, agent ${p50('vm_boot_agent_ms')}, ` +
    `hello ${p50('vm_boot_hello_ms')}, ready ${p50('vm_boot_ready_ms')} (start() ${ms(median(boots.map((b) => b.readyMs)))}) ms`
  );
}

export async function vmBench(): Promise<boolean> {
  const unavailable = vmUnavailable();
  const qemu = findQemu();
  if (unavailable || !qemu) return skip(unavailable ?? 'qemu-system-x86_64 is not installed');
  const accel = probeAccelerator();
  const home = vmTestHome();
  const backend = new QemuBackend(qemu, accel);
  const live = new Set<VmSession>();
  const upHome = tempHome();
  let upstream: ReturnType<typeof createServer> | null = null;
  let plainUpstream: ReturnType<typeof createPlainServer> | null = null;
  try {
    console.log(`  accelerator: ${accel.reason}; images cached in ${IMAGE_CACHE}`);
    const agent = agentBinary();
    const minimal = await prepareImage(home, 'minimal', agent);
    await prepareImage(home, 'agent', agent);

    const start = (plan: (paths: SessionPaths, ca: string) => Promise<BootPlan>, hostEnv?: NodeJS.ProcessEnv): Promise<VmSession> =>
      VmSession.start({ home, command: ['bench'], backend, plan, hostEnv, memoryMiB: MEMORY_MIB }).then((s) => {
        live.add(s);
        void s.ended.then(() => live.delete(s));
        return s;
      });
    const minimalPlan = imageBootPlan(home, 'minimal');

    // 1. Boot: alternate bare and session boots, one at a time, after one untimed warm-up of each.
    console.log(`  boots: ${BOOTS} bare and ${BOOTS} session boots of the minimal image, alternating, after a warm-up of each...`);
    const bareRun = join(home.runDir, 'bare');
    await bareBoot(qemu, accel, minimal, bareRun);
    await sessionBoot(start, minimalPlan);
    const bare: number[] = [];
    const ours: SessionBoot[] = [];
    for (let i = 0; i < BOOTS; i++) {
      bare.push(await bareBoot(qemu, accel, minimal, bareRun));
      ours.push(await sessionBoot(start, minimalPlan));
      console.log(`  boot ${i + 1}/${BOOTS}: bare ${ms(bare[i]!)} ms, session to first output ${ms(ours[i]!.firstOutputMs)} ms`);
    }
    const first = ours.map((b) => b.firstOutputMs);
    const bootRatio = percentile(first, 50) / percentile(bare, 50);

    // 2. Warm exec round trips in one running minimal VM.
    console.log(`  warm exec: ${EXECS} x \`true\` in a running minimal VM...`);
    const warm = await start(minimalPlan);
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

    // 3. Guest download through the recording proxy vs the raw channel, in one agent VM.
    const ca = await CertificateAuthority.load(upHome);
    const leaf = await ca.issueLeaf(HOST);
    const caFile = join(upHome.root, 'upstream-ca.pem');
    writeFileSync(caFile, ca.certPem);
    const chunk = Buffer.alloc(1 << 20, 0x61);
    const serve = (req: IncomingMessage, res: ServerResponse): void => {
      if (req.url !== '/64m') {
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': 3 });
        return void res.end('ok\n');
      }
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': BYTES });
      let sent = 0;
      const pump = (): void => {
        while (sent < BYTES) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      pump();
    };
    upstream = createServer({ cert: leaf.certPem + ca.certPem, key: leaf.keyPem }, serve);
    plainUpstream = createPlainServer(serve);
    await Promise.all([upstream, plainUpstream].map((server) => new Promise<void>((r) => server.listen(0, '127.0.0.1', r))));
    const upPort = (upstream.address() as AddressInfo).port;
    const plainPort = (plainUpstream.address() as AddressInfo).port;
    console.log(`  transfer: ${TRANSFERS} x 64 MiB through the proxy (guest curl) and over the raw channel, in one agent VM...`);
    const vm = await start(imageBootPlan(home, 'agent'), {
      ...process.env,
      CAPSEM_RESOLVE: `${HOST}:443=127.0.0.1:${upPort},${HOST}:80=127.0.0.1:${plainPort}`,
      CAPSEM_UPSTREAM_CA_FILE: caFile,
    });
    const download: Download[] = [];
    const plain: number[] = [];
    const channel: number[] = [];
    // The cipher the proxy gives the guest's TLS (guestCrypto.ts), and its speed there.
    const cipher = guestCipherOrder(accel.accel) === 'chacha20-first' ? 'chacha20-poly1305' : 'aes-128-gcm';
    let guestCipher = NaN;
    interface Download {
      readonly host: number;
      readonly guest: number;
      /** CPU seconds curl itself used in the guest (user and system, the shell's `times` for its children) per second of its transfer. */
      readonly curlShare: number;
      readonly coresBusy: number;
    }
    const fetchTimed = async (url: string): Promise<Download> => {
      const busy = hostCoresBusyFrom();
      const d = await execTimed(vm, [
        'sh',
        '-c',
        `curl -sS -o /dev/null -w '%{size_download} %{time_total}\\n' ${url}; code=$?; times; exit $code`,
      ]);
      const coresBusy = busy();
      const [result = '', , children = ''] = d.out.trim().split('\n');
      const [size, seconds] = result.split(' ').map(Number);
      if (d.code !== 0 || size !== BYTES || !seconds)
        throw new Error(`guest download of ${url} failed (exit ${d.code}, output "${d.out.trim()}"): ${d.err}`);
      const curlCpu = children.split(' ').reduce((sum, t) => sum + shellSeconds(t), 0);
      return { host: mib(BYTES, d.ms), guest: mib(BYTES, seconds * 1000), curlShare: curlCpu / seconds, coresBusy };
    };
    try {
      const hello = await execTimed(vm, ['curl', '-sS', `https://${HOST}/hello`]);
      if (hello.code !== 0 || hello.out !== 'ok\n')
        throw new Error(`guest curl through the proxy failed (exit ${hello.code}): ${hello.err}${hello.out}`);
      for (let i = 0; i < TRANSFERS; i++) {
        download.push(await fetchTimed(`https://${HOST}/64m`));
        plain.push((await fetchTimed(`http://${HOST}/64m`)).guest);
        const c = await execTimed(vm, ['head', '-c', String(BYTES), '/dev/zero']);
        if (c.code !== 0 || c.stdoutBytes !== BYTES)
          throw new Error(`head -c in the guest: exit ${c.code}, ${c.stdoutBytes} bytes: ${c.err}`);
        channel.push(mib(BYTES, c.outputMs));
        console.log(
          `  transfer ${i + 1}/${TRANSFERS}: download ${download[i]!.guest.toFixed(1)} MiB/s (${download[i]!.host.toFixed(1)} counting curl's start), plain HTTP ${plain[i]!.toFixed(1)} MiB/s, channel ${channel[i]!.toFixed(1)} MiB/s`,
        );
      }
      // Context for the download figure: the guest's own TLS bulk cipher speed (curl decrypts in the guest).
      const openssl = await execTimed(vm, ['sh', '-c', `openssl speed -seconds 1 -bytes 16384 -evp ${cipher} 2>/dev/null | tail -1`]);
      guestCipher = Number(openssl.out.trim().split(/\s+/).pop()?.replace(/k$/, '')) / 1024;
    } finally {
      await vm.stop();
    }
    const downHost = median(download.map((d) => d.host));
    const downGuest = median(download.map((d) => d.guest));
    const plainGuest = median(plain);
    const chan = median(channel);
    const coresBusy = median(download.map((d) => d.coresBusy));
    const curlBusy = median(download.map((d) => d.curlShare));

    return printFigures(
      `vm: real QEMU (${accel.accel}) boots, execs and transfers, against bare QEMU and the raw channel in the same run`,
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
        figure('raw channel, 64 MiB exec output, first byte to end', `${chan.toFixed(1)} MiB/s`, true, 'baseline'),
        figure(
          `  guest ${cipher} (openssl speed)`,
          `${guestCipher.toFixed(1)} MiB/s, a ceiling for curl's TLS in the guest`,
          true,
          'context',
        ),
        figure(
          'guest curl 64 MiB via the proxy',
          `${downGuest.toFixed(1)} MiB/s = ${(downGuest / chan).toFixed(2)}x channel (${downHost.toFixed(1)} MiB/s counting curl's start)`,
          downGuest / chan >= 0.5,
          '>= 0.5x channel',
        ),
        figure(
          "  guest curl's own CPU during the download",
          `${curlBusy.toFixed(2)} s (user and system, its start included) for each second of its transfer: near 1, curl's own work on its vCPU is the limit`,
          true,
          'context',
        ),
        figure(
          '  host CPU during the download',
          `${coresBusy.toFixed(2)} of ${cpus().length} cores busy on average (QEMU's vCPUs and I/O, the proxy, the upstream), curl's start included`,
          true,
          'context',
        ),
        figure(
          '  the same download over plain HTTP (no TLS in the guest)',
          `${plainGuest.toFixed(1)} MiB/s = ${(plainGuest / chan).toFixed(2)}x channel`,
          true,
          'context',
        ),
      ],
    );
  } finally {
    await Promise.all([...live].map((s) => s.stop()));
    upstream?.close();
    plainUpstream?.close();
    home.remove();
    upHome.remove();
  }
}
