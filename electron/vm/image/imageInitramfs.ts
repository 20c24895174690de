import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { gzipSync, gunzipSync } from 'node:zlib';
import { runCommand } from './imageCommand.ts';
import { writeNewc, type CpioEntry } from './imageCpio.ts';
import { elfInterpreter } from './imageElf.ts';
import type { GuestFile } from './guestNodeProxy.ts';
import type { KernelModule } from './imageKernel.ts';
import type { GuestRecipe, ImageKind } from './imageRecipe.ts';

export interface Busybox {
  readonly path: string;
  readonly version: string;
}

/** The initramfs runs busybox with no libc beside it, so only a static build will do. */
export function findBusybox(): Busybox {
  const path = ['/bin/busybox', '/usr/bin/busybox'].find((p) => existsSync(p));
  if (!path) throw new Error('busybox is not installed: install the static build (Debian package busybox-static)');
  if (elfInterpreter(readFileSync(path)) !== null) {
    throw new Error(`${path} is dynamically linked; the guest initramfs needs the static build (Debian package busybox-static)`);
  }
  const help = spawnSync(path, ['--help'], { encoding: 'utf8' });
  const version = (help.stdout ?? '').split('\n')[0]?.trim() ?? '';
  if (!version.startsWith('BusyBox')) throw new Error(`${path} --help did not print a BusyBox version`);
  return { path, version };
}

/** Shared libraries (and the loader) of a dynamic executable, as ldd resolves them on this host. */
export async function sharedLibraries(executable: string): Promise<string[]> {
  if (elfInterpreter(readFileSync(executable)) === null) return [];
  const out = await runCommand('ldd', [executable]);
  const paths = new Set<string>();
  for (const line of out.split('\n')) {
    const match = /=>\s*(\/\S+)/.exec(line) ?? /^\s*(\/\S+)/.exec(line);
    if (match?.[1]) paths.add(match[1]);
  }
  return [...paths].sort();
}

/** Modules are stored uncompressed: busybox insmod cannot be relied on to read .ko.xz or .ko.zst. */
function moduleBytes(path: string): Buffer {
  if (path.endsWith('.ko')) return readFileSync(path);
  if (path.endsWith('.ko.gz')) return gunzipSync(readFileSync(path));
  const tool = path.endsWith('.ko.xz') ? 'xz' : path.endsWith('.ko.zst') ? 'zstd' : null;
  if (!tool) throw new Error(`unknown kernel module format: ${path}`);
  const result = spawnSync(tool, ['-dc', path], { maxBuffer: 64 * 1024 * 1024 });
  if (result.status !== 0) throw new Error(`${tool} -dc ${path} failed: ${result.error?.message ?? result.stderr.toString()}`);
  return result.stdout;
}

export interface InitramfsInputs {
  readonly kind: ImageKind;
  readonly recipe: GuestRecipe;
  readonly busybox: Busybox;
  readonly modules: readonly KernelModule[];
  readonly agentBinary: string;
  /** Only the minimal image runs the agent from the initramfs; the agent image has libc in its rootfs. */
  readonly agentLibraries: readonly string[];
  /** More files init copies into the root it boots (the agent image's Node proxy support). */
  readonly extraFiles: readonly GuestFile[];
}

export function buildInitramfs(inputs: InitramfsInputs, outPath: string): void {
  const entries: CpioEntry[] = [
    { type: 'chardev', path: 'dev/console', major: 5, minor: 1, mode: 0o600 },
    ...['proc', 'sys', 'dev', 'run', 'workspace', 'root'].map((path): CpioEntry => ({ type: 'dir', path, mode: 0o755 })),
    { type: 'dir', path: 'tmp', mode: 0o1777 },
    { type: 'file', path: 'etc/passwd', data: Buffer.from('root:x:0:0:root:/root:/bin/sh\n') },
    { type: 'file', path: 'etc/group', data: Buffer.from('root:x:0:\ntty:x:5:\n') },
    { type: 'file', path: 'init', data: Buffer.from(inputs.recipe.initScript), mode: 0o755 },
    { type: 'file', path: 'lib/capsem/init-common.sh', data: Buffer.from(inputs.recipe.files['init-common.sh']!), mode: 0o644 },
    { type: 'file', path: 'bin/busybox', data: readFileSync(inputs.busybox.path), mode: 0o755 },
    { type: 'file', path: 'sbin/capsem-agent', data: readFileSync(inputs.agentBinary), mode: 0o755 },
  ];
  const applets = spawnSync(inputs.busybox.path, ['--list-full'], { encoding: 'utf8' })
    .stdout.split('\n')
    .map((l) => l.trim());
  const taken = new Set(entries.map((e) => e.path));
  for (const applet of applets) {
    // `--list-full` includes busybox itself; a link there would replace the binary with a loop.
    if (applet.length === 0 || applet === 'bin/busybox' || taken.has(applet)) continue;
    entries.push({ type: 'symlink', path: applet, target: '/bin/busybox' });
    taken.add(applet);
  }
  const order: string[] = [];
  for (const mod of inputs.modules) {
    const file = `${mod.name}.ko`;
    entries.push({ type: 'file', path: `lib/modules/capsem/${file}`, data: moduleBytes(mod.path), mode: 0o644 });
    order.push(file);
  }
  entries.push({ type: 'file', path: 'lib/modules/capsem/load-order', data: Buffer.from(order.map((f) => `${f}\n`).join('')) });
  for (const lib of inputs.agentLibraries) {
    if (taken.has(lib.replace(/^\//, ''))) continue;
    // Stored as a file at the path ldd printed (often a symlink on the host, such as /lib64/ld-linux*).
    entries.push({ type: 'file', path: lib, data: readFileSync(lib), mode: 0o755 });
    taken.add(lib.replace(/^\//, ''));
  }
  for (const extra of inputs.extraFiles)
    entries.push({ type: 'file', path: extra.guestPath, data: readFileSync(extra.hostPath), mode: 0o644 });
  writeFileSync(outPath, gzipSync(writeNewc(entries), { level: 1 }), { mode: 0o644 });
}
