import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CertificateAuthority } from '../../electron/proxy/certificateAuthority.ts';
import { guestCipherOrder } from '../../electron/vm/guestCrypto.ts';
import { imageBootPlan } from '../../electron/vm/image/imagePlan.ts';
import type { MuxStream } from '../../electron/vm/mux.ts';
import type { VmSession } from '../../electron/vm/vmSession.ts';
import { tempHome } from '../helpers/tempHome.ts';
import {
  boundingHop,
  hopTable,
  hopWindow,
  hostCpuPerBlock,
  sampleHost,
  type HopProcess,
  type HopWindow,
  type HostSample,
} from './hopTimes.ts';
import { cpuMs } from './processCpu.ts';
import { figure, median, printFigures, roundRatios, type Figure } from './report.ts';
import { execTimed, mib, withBenchVms, type BenchVms } from './vmHarness.ts';

// A guest curl download of 64 MiB, each way against a ceiling measured in the same VM, in rounds
// so that load from elsewhere on the host falls on all of them alike:
//  - HTTPS through the recording proxy, against the same curl over TLS from a server inside the
//    guest (openssl s_server on loopback, the file on tmpfs, the cipher the proxy negotiates): the
//    guest's own TLS ceiling. That server encrypts on the guest's vCPUs, where the proxy does it
//    on the host, so the ceiling errs low. Its ratio to the channel stays as context: curl's own
//    work on its vCPU bounds it (about 1 CPU second per second of transfer), not the channel;
//  - plain HTTP through the proxy, against the raw agent channel the same way, host to guest (64 MiB
//    into a command's stdin); the channel out of the guest (exec output of `head -c` from
//    /dev/zero) is the older baseline, kept beside. The same curl over plain HTTP from a server on
//    the guest's loopback is its own ceiling, beside the target: the path through the agent adds
//    that loopback hop to the channel. The agent's CPU and read calls for each path say where its
//    time goes.
// Downloads are timed by curl's own clock (connect, TLS, request and body), the channel from its
// first byte of output to its end, so neither counts a process start (curl's takes about half a
// second under TCG; the download timed with it is printed beside). The plain HTTP target compares
// on the host's clock alone: the download from the guest's OPEN of its connection to its CLOSE as
// the mux sees them, against the channel into the guest, as the guest's clock drifts under TCG
// load. Both are profiled hop by hop over that time (hopTimes.ts).

const TRANSFERS = 5;
const BYTES = 64 << 20;
const HOST = 'download.bench.test';
const IN_GUEST_DIR = '/tmp/capsem-bench-tls';
const IN_GUEST_URL = 'https://127.0.0.1:8443/64m';
const IN_GUEST_CA = ['--cacert', `${IN_GUEST_DIR}/cert.pem`];
const IN_GUEST_HTTP_URL = 'http://127.0.0.1:8080/64m';

interface Download {
  /** MiB/s counting curl's start. */
  readonly host: number;
  /** MiB/s by curl's own clock. */
  readonly guest: number;
  /** CPU seconds curl itself used in the guest (user and system, the shell's `times` for its children) per second of its transfer. */
  readonly curlShare: number;
  /** What the guest agent did over the same time. */
  readonly agent: AgentUse;
  readonly coresBusy: number;
  /** CPU seconds of this process's main thread (the proxy, the agent's mux) per second of the transfer. */
  readonly hostMainShare: number;
}

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

/** The guest agent's (pid 1) work over one transfer. */
interface AgentUse {
  /** User and system CPU seconds. */
  readonly cpu: number;
  /** Read system calls (the port's, a page each at most for a plain read, and any other). */
  readonly reads: number;
  /** CPU seconds the whole guest was busy (all its CPUs, neither idle nor waiting on I/O), by its own accounting. */
  readonly guestBusy: number;
}

/**
 * The guest agent's user and system CPU so far in clock ticks (100 a second), its read calls, and
 * the ticks the whole guest has been busy (user, nice, system, irq, softirq, steal): four numbers.
 */
const AGENT_COUNTERS =
  "echo $(cut -d' ' -f14,15 /proc/1/stat) $(sed -n 's/^syscr: //p' /proc/1/io) " +
  '$({ read -r _ u n s i w q sq st _; echo $((u+n+s+q+sq+st)); } < /proc/stat)';

/** The agent's work between two AGENT_COUNTERS readings printed on one line. */
function agentUse(line: string): AgentUse {
  const [u0, s0, r0, b0, u1, s1, r1, b1] = line.split(' ').map(Number);
  return { cpu: (u1! + s1! - u0! - s0!) / 100, reads: r1! - r0!, guestBusy: (b1! - b0!) / 100 };
}

/** AGENT_COUNTERS, read by a command of its own. */
async function agentCounters(vm: VmSession): Promise<string> {
  return (await execTimed(vm, ['sh', '-c', AGENT_COUNTERS])).out.trim();
}

/** A duration as the shell's `times` prints it ("1m2.500s"), in seconds; NaN for anything else. */
function shellSeconds(text: string): number {
  const m = /^(\d+)m([\d.]+)s$/.exec(text);
  return m ? Number(m[1]) * 60 + Number(m[2]) : NaN;
}

/** The upstream in its own process (downloadUpstreamChild.ts): its HTTPS and plain HTTP ports. */
async function startUpstream(certPem: string, keyPem: string, dir: string): Promise<{ proc: ChildProcess; tls: number; plain: number }> {
  writeFileSync(join(dir, 'upstream-cert.pem'), certPem);
  writeFileSync(join(dir, 'upstream-key.pem'), keyPem, { mode: 0o600 });
  const proc = fork(fileURLToPath(new URL('./downloadUpstreamChild.ts', import.meta.url)), {
    execArgv: ['--import', 'tsx'],
    env: {
      ...process.env,
      DOWNLOAD_BYTES: String(BYTES),
      DOWNLOAD_CERT_FILE: join(dir, 'upstream-cert.pem'),
      DOWNLOAD_KEY_FILE: join(dir, 'upstream-key.pem'),
    },
  });
  const ports = await new Promise<{ tls: number; plain: number }>((resolve, reject) => {
    proc.once('message', (m) => resolve(m as { tls: number; plain: number }));
    proc.once('exit', (code) => reject(new Error(`the download upstream exited (${code}) before listening`)));
  });
  return { proc, ...ports };
}

/** A guest curl of `url` (with `curlArgs`) timed by curl's clock, the guest's CPU for it and the host's. */
async function fetchTimed(vm: VmSession, url: string, curlArgs: readonly string[] = []): Promise<Download> {
  const busy = hostCoresBusyFrom();
  const main0 = cpuMs(process.pid, process.pid);
  const d = await execTimed(vm, [
    'sh',
    '-c',
    `a=$(${AGENT_COUNTERS}); curl -sS -o /dev/null -w '%{size_download} %{time_total}\\n' ${curlArgs.join(' ')} ${url}; ` +
      `code=$?; b=$(${AGENT_COUNTERS}); times; echo $a $b; exit $code`,
  ]);
  const coresBusy = busy();
  const mainMs = cpuMs(process.pid, process.pid) - main0;
  const [result = '', , children = '', agent = ''] = d.out.trim().split('\n');
  const [size, seconds] = result.split(' ').map(Number);
  if (d.code !== 0 || size !== BYTES || !seconds)
    throw new Error(`guest download of ${url} failed (exit ${d.code}, output "${d.out.trim()}"): ${d.err}`);
  const curlCpu = children.split(' ').reduce((sum, t) => sum + shellSeconds(t), 0);
  return {
    host: mib(BYTES, d.ms),
    guest: mib(BYTES, seconds * 1000),
    curlShare: curlCpu / seconds,
    agent: agentUse(agent),
    coresBusy,
    hostMainShare: mainMs / 1000 / seconds,
  };
}

/** A plain download timed on the host's clock, from the guest's OPEN of its connection to its CLOSE, and profiled over that time. */
interface PlainDownload {
  readonly download: Download;
  /** MiB/s on the host's clock. */
  readonly hostRate: number;
  readonly hops: HopWindow;
}

/** CPU seconds a guest curl of a 3-byte answer uses: its start, taken off a download's CPU to leave the transfer's. */
async function curlStartCpu(vm: VmSession): Promise<number> {
  const r = await execTimed(vm, ['sh', '-c', `curl -sS -o /dev/null http://${HOST}/hello; code=$?; times; exit $code`]);
  const children = r.out.trim().split('\n')[1] ?? '';
  if (r.code !== 0) throw new Error(`guest curl http://${HOST}/hello failed (exit ${r.code}): ${r.err}`);
  return children.split(' ').reduce((sum, t) => sum + shellSeconds(t), 0);
}

async function plainTimed(vm: VmSession, processes: readonly HopProcess[]): Promise<PlainDownload> {
  const { mux } = vm.transport;
  let before: HostSample | null = null;
  let after: HostSample | null = null;
  const onStream = (s: MuxStream): void => {
    if (s.meta.kind !== 'net' || before) return;
    before = sampleHost(processes, mux.counters);
    const ended = (): void => void (after ??= sampleHost(processes, mux.counters));
    s.once('end', ended);
    s.once('close', ended);
  };
  mux.on('stream', onStream);
  let download: Download;
  try {
    download = await fetchTimed(vm, `http://${HOST}/64m`);
  } finally {
    mux.off('stream', onStream);
  }
  const start = await curlStartCpu(vm);
  if (!before || !after) throw new Error('the plain download never opened and closed a net stream through the mux');
  const hops = hopWindow(before, after, BYTES, {
    agentCpu: download.agent.cpu,
    agentReads: download.agent.reads,
    curlCpu: Math.max(0, curlSeconds(download) - start),
    guestBusy: Math.max(0, download.agent.guestBusy - start),
  });
  return { download, hostRate: mib(BYTES, hops.wallMs), hops };
}

/** CPU seconds curl used in all for a download, its start included. */
const curlSeconds = (d: Download): number => (d.curlShare * (BYTES >> 20)) / d.guest;

/** What curl negotiates with `url`: "TLSv1.3 / TLS_..., HTTP/2". */
async function negotiated(vm: VmSession, url: string, curlArgs: readonly string[] = []): Promise<string> {
  const r = await execTimed(vm, [
    'sh',
    '-c',
    `curl -sS -v -o /dev/null -w 'HTTP/%{http_version}\\n' ${curlArgs.join(' ')} ${url} 2>&1 | ` +
      "sed -n -e 's/^\\* SSL connection using //p' -e '/^HTTP\\//p'",
  ]);
  const [tls, http] = r.out.trim().split('\n');
  if (r.code !== 0 || !tls || !http) throw new Error(`guest curl -v ${url}: exit ${r.code}: ${r.err}${r.out}`);
  return `${tls}, ${http}`;
}

interface ChannelIn {
  /** MiB/s. */
  readonly rate: number;
  readonly agent: AgentUse;
  readonly hops: HopWindow;
}

/**
 * The raw channel the way a download goes, host to guest: 64 MiB written to a command's stdin, in
 * MiB/s from the guest's first read (it echoes once it has one byte, so wc's start is not timed)
 * to the command's exit, and the agent's work for it (the command's start included).
 */
async function channelIn(vm: VmSession, processes: readonly HopProcess[]): Promise<ChannelIn> {
  const counters = await agentCounters(vm);
  const { stream, result } = vm.exec(['sh', '-c', 'dd bs=1 count=1 of=/dev/null status=none; echo; exec wc -c'], { stdin: true });
  let out = '';
  const reading = new Promise<void>((resolve) =>
    stream.on('data', (c: Buffer) => {
      out += c.toString();
      if (out === '\n') resolve();
    }),
  );
  stream.write(Buffer.alloc(1));
  await reading;
  const t = performance.now();
  const before = sampleHost(processes, vm.transport.mux.counters);
  const chunk = Buffer.alloc(1 << 20);
  for (let sent = 0; sent < BYTES; sent += chunk.length)
    if (!stream.write(chunk)) await new Promise((resolve) => stream.once('drain', resolve));
  stream.end();
  const r = await result;
  const ms = performance.now() - t;
  const after = sampleHost(processes, vm.transport.mux.counters);
  if (r.code !== 0 || out.trim() !== String(BYTES)) throw new Error(`wc -c in the guest: exit ${r.code}, output "${out.trim()}"`);
  const agent = agentUse(`${counters} ${await agentCounters(vm)}`);
  return {
    rate: mib(BYTES, ms),
    agent,
    hops: hopWindow(before, after, BYTES, { agentCpu: agent.cpu, agentReads: agent.reads, guestBusy: agent.guestBusy }),
  };
}

/** A server started in the guest by `command` (a shell line that ends by exec'ing it); `stop` ends it. */
async function startInGuestServer(vm: VmSession, command: string, probe: readonly string[]): Promise<{ stop: () => Promise<void> }> {
  const server = vm.exec(['sh', '-c', `echo $$; cd ${IN_GUEST_DIR} && ${command}`]);
  let out = '';
  server.stream.on('data', (c: Buffer) => (out = (out + c.toString()).slice(-2000)));
  server.stream.stderr.on('data', (c: Buffer) => (out = (out + c.toString()).slice(-2000)));
  const stop = async (): Promise<void> => {
    await execTimed(vm, ['kill', out.split('\n')[0]!]);
    await server.result;
  };
  for (let tries = 0; ; tries++) {
    const up = await execTimed(vm, ['curl', '-sS', '-o', '/dev/null', ...probe]);
    if (up.code === 0) return { stop };
    if (tries === 50) {
      await stop();
      throw new Error(`the in-guest server never answered: ${up.err}\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * openssl s_server in the guest serving a 64 MiB file from tmpfs over TLS 1.3 with only `suite`,
 * on a self-signed P-256 key as the proxy's leaves are; `stop` ends it.
 */
async function startInGuestTls(vm: VmSession, suite: string): Promise<{ stop: () => Promise<void> }> {
  const made = await execTimed(vm, [
    'sh',
    '-c',
    `mkdir -p ${IN_GUEST_DIR} && cd ${IN_GUEST_DIR} && head -c ${BYTES} /dev/zero > 64m && ` +
      'openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=127.0.0.1 ' +
      '-addext subjectAltName=IP:127.0.0.1 -days 1 -keyout key.pem -out cert.pem 2>&1',
  ]);
  if (made.code !== 0) throw new Error(`making the in-guest TLS server's file and key: exit ${made.code}: ${made.out}${made.err}`);
  return startInGuestServer(
    vm,
    `exec openssl s_server -quiet -WWW -accept 127.0.0.1:8443 -cert cert.pem -key key.pem -tls1_3 -ciphersuites ${suite}`,
    [...IN_GUEST_CA, IN_GUEST_URL.replace('/64m', '/cert.pem')],
  );
}

/**
 * The same file over plain HTTP/1.1 on loopback, by a bench-only python3 loop that answers any
 * request with it through sendfile: the cheapest server the image allows, so what bounds the
 * download is curl and the guest's loopback TCP, as on the plain path through the agent.
 */
function startInGuestHttp(vm: VmSession): Promise<{ stop: () => Promise<void> }> {
  const serve =
    'import os,socket\n' +
    's=socket.create_server(("127.0.0.1",8080))\n' +
    'f=open("64m","rb")\n' +
    'n=os.fstat(f.fileno()).st_size\n' +
    'while True:\n' +
    ' c,_=s.accept()\n' +
    ' c.recv(65536)\n' +
    ' c.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: %d\\r\\nConnection: close\\r\\n\\r\\n"%n)\n' +
    ' c.sendfile(f,0)\n' +
    ' c.close()\n';
  return startInGuestServer(vm, `exec python3 -c '${serve}'`, [IN_GUEST_HTTP_URL]);
}

/** The agent's median CPU and read calls for one 64 MiB transfer, and the share of a vCPU that CPU is at `rate` MiB/s. */
function agentFigure(uses: readonly AgentUse[], rate: number): string {
  const cpu = median(uses.map((u) => u.cpu));
  return `${cpu.toFixed(2)} s CPU (${((cpu * rate) / (BYTES >> 20)).toFixed(2)} of a vCPU), ${median(uses.map((u) => u.reads))} reads`;
}

/** The download figures, from one agent VM (its image already prepared). */
export async function downloadFigures(vms: BenchVms): Promise<Figure[]> {
  const upHome = tempHome();
  let upstreamProc: ChildProcess | null = null;
  try {
    const ca = await CertificateAuthority.load(upHome);
    const leaf = await ca.issueLeaf(HOST);
    const caFile = join(upHome.root, 'upstream-ca.pem');
    writeFileSync(caFile, ca.certPem);
    const upstream = await startUpstream(leaf.certPem + ca.certPem, leaf.keyPem, upHome.root);
    upstreamProc = upstream.proc;
    console.log(
      `  transfer: ${TRANSFERS} rounds of 64 MiB after a warm-up round (guest curl through the proxy over HTTPS and plain HTTP, over TLS inside the guest, and the raw channel each way), in one agent VM...`,
    );
    const vm = await vms.start(imageBootPlan(vms.home, 'agent'), {
      hostEnv: {
        ...process.env,
        CAPSEM_RESOLVE: `${HOST}:443=127.0.0.1:${upstream.tls},${HOST}:80=127.0.0.1:${upstream.plain}`,
        CAPSEM_UPSTREAM_CA_FILE: caFile,
      },
    });
    const download: Download[] = [];
    const inGuest: number[] = [];
    const plain: Download[] = [];
    const plainHost: PlainDownload[] = [];
    const plainInGuest: Download[] = [];
    const channel: number[] = [];
    const toGuest: ChannelIn[] = [];
    // The cipher the proxy gives the guest's TLS (guestCrypto.ts), and its speed there.
    const [cipher, suite] =
      guestCipherOrder(vms.accel.accel) === 'chacha20-first'
        ? ['chacha20-poly1305', 'TLS_CHACHA20_POLY1305_SHA256']
        : ['aes-128-gcm', 'TLS_AES_128_GCM_SHA256'];
    let guestCipher = NaN;
    let viaProxy = '';
    let withinGuest = '';
    const processes: HopProcess[] = [
      { role: 'bench', pid: process.pid },
      { role: 'upstream', pid: upstream.proc.pid! },
      { role: 'qemu', pid: vm.transport.pids[0]! },
    ];
    try {
      const hello = await execTimed(vm, ['curl', '-sS', `https://${HOST}/hello`]);
      if (hello.code !== 0 || hello.out !== 'ok\n')
        throw new Error(`guest curl through the proxy failed (exit ${hello.code}): ${hello.err}${hello.out}`);
      const server = await startInGuestTls(vm, suite);
      const plainServer = await startInGuestHttp(vm).catch(async (err: unknown) => {
        await server.stop();
        throw err;
      });
      try {
        viaProxy = await negotiated(vm, `https://${HOST}/hello`);
        withinGuest = await negotiated(vm, IN_GUEST_URL.replace('/64m', '/cert.pem'), IN_GUEST_CA);
        const tls = (line: string): string => line.split(',')[0]!;
        if (tls(viaProxy) !== tls(withinGuest))
          throw new Error(`curl negotiates ${viaProxy} through the proxy but ${withinGuest} inside the guest`);
        // Each transfer starts once the recording of the one before is committed, so none is timed
        // while the proxy's writer still stores another's 64 MiB; one untimed round warms the guest.
        const round = async (): Promise<{
          download: Download;
          inGuest: number;
          plain: PlainDownload;
          plainInGuest: Download;
          channel: number;
          channelIn: ChannelIn;
        }> => {
          await vm.recording.writer.flush();
          const d = await fetchTimed(vm, `https://${HOST}/64m`);
          await vm.recording.writer.flush();
          const g = await fetchTimed(vm, IN_GUEST_URL, IN_GUEST_CA);
          const p = await plainTimed(vm, processes);
          const h = await fetchTimed(vm, IN_GUEST_HTTP_URL);
          await vm.recording.writer.flush();
          const c = await execTimed(vm, ['head', '-c', String(BYTES), '/dev/zero']);
          if (c.code !== 0 || c.stdoutBytes !== BYTES)
            throw new Error(`head -c in the guest: exit ${c.code}, ${c.stdoutBytes} bytes: ${c.err}`);
          const i = await channelIn(vm, processes);
          return { download: d, inGuest: g.guest, plain: p, plainInGuest: h, channel: mib(BYTES, c.outputMs), channelIn: i };
        };
        await round();
        for (let i = 0; i < TRANSFERS; i++) {
          const r = await round();
          download.push(r.download);
          inGuest.push(r.inGuest);
          plain.push(r.plain.download);
          plainHost.push(r.plain);
          plainInGuest.push(r.plainInGuest);
          channel.push(r.channel);
          toGuest.push(r.channelIn);
          console.log(
            `  transfer ${i + 1}/${TRANSFERS}: download ${r.download.guest.toFixed(1)} MiB/s (${r.download.host.toFixed(1)} counting curl's start), ` +
              `TLS inside the guest ${r.inGuest.toFixed(1)} MiB/s, plain HTTP ${r.plain.download.guest.toFixed(1)} MiB/s ` +
              `(${r.plain.hostRate.toFixed(1)} by the host's clock; inside the guest ${r.plainInGuest.guest.toFixed(1)}), ` +
              `channel ${r.channel.toFixed(1)} MiB/s out, ${r.channelIn.rate.toFixed(1)} MiB/s in; ` +
              `agent ${r.plain.download.agent.cpu.toFixed(2)} s CPU on plain HTTP, ${r.channelIn.agent.cpu.toFixed(2)} on the channel in; ` +
              `host main thread ${r.plain.download.hostMainShare.toFixed(2)} s/s on plain HTTP`,
          );
        }
      } finally {
        await plainServer.stop();
        await server.stop();
      }
      // Context for the download figure: the guest's own TLS bulk cipher speed (curl decrypts in the guest).
      const openssl = await execTimed(vm, ['sh', '-c', `openssl speed -seconds 1 -bytes 16384 -evp ${cipher} 2>/dev/null | tail -1`]);
      guestCipher = Number(openssl.out.trim().split(/\s+/).pop()?.replace(/k$/, '')) / 1024;
    } finally {
      await vm.stop();
    }
    const downHost = median(download.map((d) => d.host));
    const downGuest = median(download.map((d) => d.guest));
    const ceiling = median(inGuest);
    const plainGuest = median(plain.map((d) => d.guest));
    const plainCeiling = median(plainInGuest.map((d) => d.guest));
    const chan = median(channel);
    const chanIn = median(toGuest.map((c) => c.rate));
    const plainAgent = agentFigure(
      plain.map((d) => d.agent),
      plainGuest,
    );
    const chanInAgent = agentFigure(
      toGuest.map((c) => c.agent),
      chanIn,
    );
    // Each target is the median of its per-round ratios: the channel runs at two speeds from round
    // to round with the host's load, and a ratio of the two medians swung with it.
    const tlsRatio = median(
      roundRatios(
        download.map((d) => d.guest),
        inGuest,
      ),
    );
    const plainGuestRatio = median(
      roundRatios(
        plain.map((d) => d.guest),
        toGuest.map((c) => c.rate),
      ),
    );
    const plainRatio = median(
      roundRatios(
        plainHost.map((d) => d.hostRate),
        toGuest.map((c) => c.rate),
      ),
    );
    const plainHostRate = median(plainHost.map((d) => d.hostRate));
    const plainHops = plainHost.map((d) => d.hops);
    const channelHops = toGuest.map((c) => c.hops);
    console.log(`\n  hop by hop, summed over ${TRANSFERS} rounds, on the host's clock:`);
    for (const line of hopTable([
      { label: 'plain HTTP via proxy', windows: plainHops },
      { label: 'channel into guest', windows: channelHops },
    ]))
      console.log(`    ${line}`);
    const plainLimit = boundingHop(plainHops);
    const channelLimit = boundingHop(channelHops);
    const coresBusy = median(download.map((d) => d.coresBusy));
    const curlBusy = median(download.map((d) => d.curlShare));
    return [
      figure('raw channel, 64 MiB exec output, first byte to end', `${chan.toFixed(1)} MiB/s`, true, 'baseline'),
      figure('raw channel into the guest, 64 MiB exec stdin', `${chanIn.toFixed(1)} MiB/s, the way a download goes`, true, 'baseline'),
      figure(
        `  guest ${cipher} (openssl speed)`,
        `${guestCipher.toFixed(1)} MiB/s, a ceiling for curl's TLS in the guest`,
        true,
        'context',
      ),
      figure(
        'guest curl 64 MiB over TLS inside the guest',
        `${ceiling.toFixed(1)} MiB/s from openssl s_server on loopback (${withinGuest}; via the proxy: ${viaProxy})`,
        true,
        'baseline',
      ),
      figure(
        'guest curl 64 MiB via the proxy',
        `${downGuest.toFixed(1)} MiB/s = ${(downGuest / chan).toFixed(2)}x channel (${downHost.toFixed(1)} MiB/s counting curl's start)`,
        true,
        'context',
      ),
      figure(
        '  against TLS inside the guest',
        `${tlsRatio.toFixed(2)}x the guest's own TLS ceiling (median of ${TRANSFERS} rounds' ratios)`,
        tlsRatio >= 0.8,
        '>= 0.8x TLS inside the guest',
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
        'the same download over plain HTTP (no TLS in the guest)',
        `${plainHostRate.toFixed(1)} MiB/s by the host's clock (OPEN to CLOSE at the mux), ${plainRatio.toFixed(2)}x channel into the guest ` +
          `(median of ${TRANSFERS} rounds' ratios, both on the host's clock)`,
        plainRatio >= 0.8,
        '>= 0.8x channel into the guest',
      ),
      figure(
        "  by curl's clock in the guest",
        `${plainGuest.toFixed(1)} MiB/s, ${plainGuestRatio.toFixed(2)}x channel into the guest (the guest's clock over the host's: it drifts under TCG load); ` +
          `${(plainGuest / chan).toFixed(2)}x exec output`,
        true,
        'context',
      ),
      figure(
        '  what bounds it (hop table above)',
        `plain HTTP: ${plainLimit.hop.trim()} ${(plainLimit.share * 100).toFixed(0)}% of the wall time; ` +
          `channel into the guest: ${channelLimit.hop.trim()} ${(channelLimit.share * 100).toFixed(0)}%; ` +
          `host CPU per 64 KiB ${hostCpuPerBlock(plainHops).toFixed(0)} µs against ${hostCpuPerBlock(channelHops).toFixed(0)} µs, ` +
          `so while the host's cores bound both, plain HTTP runs at most ${(hostCpuPerBlock(channelHops) / hostCpuPerBlock(plainHops)).toFixed(2)}x the channel`,
        true,
        'context',
      ),
      figure(
        '  curl over plain HTTP inside the guest',
        `${plainCeiling.toFixed(1)} MiB/s = ${(plainCeiling / chanIn).toFixed(2)}x channel into the guest, from a sendfile server on loopback: ` +
          `the guest's own ceiling for curl over plain HTTP (via the proxy: ${(plainGuest / plainCeiling).toFixed(2)}x it)`,
        true,
        'context',
      ),
      figure(
        '  CPU during the plain download',
        `guest curl ${median(plain.map((d) => d.curlShare)).toFixed(2)} s for each second of its transfer ` +
          `(${median(plain.map(curlSeconds)).toFixed(2)} s in all, ${median(plainInGuest.map(curlSeconds)).toFixed(2)} s from the loopback server); ` +
          `${median(plain.map((d) => d.coresBusy)).toFixed(2)} of ${cpus().length} host cores busy on average, curl's start included; ` +
          `the host's main thread (proxy and agent mux) ${median(plain.map((d) => d.hostMainShare)).toFixed(2)} s for each second of it`,
        true,
        'context',
      ),
      figure('  guest agent for each 64 MiB', `plain HTTP: ${plainAgent}; channel into the guest: ${chanInAgent}`, true, 'context'),
    ];
  } finally {
    if (upstreamProc?.connected) upstreamProc.disconnect();
    upHome.remove();
  }
}

/** `npm run bench -- vm-download`: only the download figures, in one agent VM (no boots, no minimal image). */
export function vmDownloadBench(): Promise<boolean> {
  return withBenchVms('vm-download', async (vms) => {
    await vms.image('agent');
    return printFigures(
      `vm-download: real QEMU (${vms.accel.accel}) guest downloads, against the raw channel and TLS inside the guest in the same run`,
      await downloadFigures(vms),
    );
  });
}
