import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { runCommand } from './imageCommand.ts';
import type { GuestRecipe } from './imageRecipe.ts';

/** Progress within one step: a fraction of that step, and a line for people. */
export type StepProgress = (fraction: number, message: string) => void;

/** mmdebstrap's two halves: fetching the packages, then installing them into the tree. */
export type DebootstrapStep = 'download' | 'install';

// mmdebstrap announces its phases with "I: ..." lines; these are their rough shares of their half.
const DEBOOTSTRAP_PHASES: readonly [RegExp, DebootstrapStep, number, string][] = [
  [/running apt-get update/, 'download', 0.1, 'updating package lists'],
  [/downloading packages/, 'download', 0.3, 'downloading packages'],
  [/extracting archives/, 'install', 0, 'extracting essential packages'],
  [/installing essential packages/, 'install', 0.2, 'installing essential packages'],
  [/installing remaining packages/, 'install', 0.4, 'installing packages'],
  [/cleaning package lists/, 'install', 0.95, 'cleaning up'],
];

// Documentation, manuals and translations are about 50 MB nobody reads inside a sandbox;
// copyright files stay, since the image redistributes the packages.
const TRIM_DPKG_OPTIONS = [
  'path-exclude=/usr/share/doc/*',
  'path-include=/usr/share/doc/*/copyright',
  'path-exclude=/usr/share/man/*',
  'path-exclude=/usr/share/locale/*',
  'path-exclude=/usr/share/info/*',
];

const SYSTEM_PATH = ['/usr/sbin', '/usr/bin', '/sbin', '/bin'];

function mountsUnder(dir: string): string[] {
  if (!existsSync('/proc/self/mountinfo')) return [];
  const prefix = `${resolve(dir)}/`;
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4]?.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8))) ?? '')
    .filter((mountPoint) => mountPoint.startsWith(prefix))
    .sort((a, b) => b.length - a.length);
}

/**
 * Removes a build folder. mmdebstrap mounts /proc and bind-mounts /sys (and some /dev nodes) inside
 * its tree; if it was killed before unmounting them, a plain recursive delete would reach into the
 * host's. So detach whatever is still mounted below first, and refuse if something stays.
 */
export function removeBuildTree(dir: string): void {
  unmountBelow(dir);
  rmSync(dir, { recursive: true, force: true });
}

function unmountBelow(dir: string): void {
  for (const mountPoint of mountsUnder(dir)) spawnSync('umount', ['--lazy', mountPoint], { stdio: 'ignore' });
  const left = mountsUnder(dir);
  if (left.length > 0) throw new Error(`not deleting ${dir}: ${left[0]} is still mounted; unmount it and delete the folder by hand`);
}

/** The prefix of a squashed tree waiting to be deleted; its pid says whether its deleter still runs. */
export const DISCARDED_PREFIX = '.tmp-discarded-';
const discarding = new Set<Promise<void>>();

/**
 * Deletes a build tree without waiting for it: renamed out of the way into `root` at once (a tree
 * of tens of thousands of files takes seconds to delete), then removed in the background. A
 * process that dies first leaves it to the next build's clean-up of abandoned folders.
 */
export function discardBuildTree(dir: string, root: string): void {
  unmountBelow(dir);
  const away = join(root, `${DISCARDED_PREFIX}${process.pid}-${randomBytes(4).toString('hex')}`);
  renameSync(dir, away);
  const done = rm(away, { recursive: true, force: true })
    .catch(() => {
      // Left for removeAbandonedBuilds once this process is gone.
    })
    .finally(() => discarding.delete(done));
  discarding.add(done);
}

/** Resolves when every tree discarded so far is deleted (for callers that remove the folder holding them). */
export async function discardsSettled(): Promise<void> {
  while (discarding.size > 0) await Promise.all([...discarding]);
}

export function requireRoot(what: string): void {
  if (typeof process.getuid === 'function' && process.getuid() !== 0) {
    throw new Error(
      `building ${what} needs root: mmdebstrap creates device nodes and files owned by other users in the rootfs. Run the build once as root (sudo), or use the minimal image`,
    );
  }
}

/** A Debian minbase tree with the recipe's packages, built in `targetDir` (which must not exist). */
export async function debootstrap(
  recipe: GuestRecipe,
  targetDir: string,
  progress: (step: DebootstrapStep, fraction: number, message: string) => void,
  signal?: AbortSignal,
): Promise<void> {
  requireRoot('the agent image');
  const args = [
    '--mode=root',
    '--variant=minbase',
    '--format=directory',
    `--include=${recipe.packages.join(',')}`,
    '--aptopt=Acquire::Retries "3"',
    ...TRIM_DPKG_OPTIONS.map((opt) => `--dpkgopt=${opt}`),
    // No fsync per unpacked file: a tree that does not finish is deleted, never used.
    '--dpkgopt=force-unsafe-io',
    recipe.suite,
    targetDir,
    ...recipe.aptSources,
  ];
  progress('download', 0, `mmdebstrap ${recipe.suite} with ${recipe.packages.length} packages`);
  await runCommand('mmdebstrap', args, {
    signal,
    // The chroot's maintainer scripts run whatever comes first on PATH: a host's pyenv shim for
    // python3 cost 292 s of one build here. The system's own tools come first.
    env: { PATH: [...SYSTEM_PATH, ...(process.env.PATH ?? '').split(':').filter((p) => p && !SYSTEM_PATH.includes(p))].join(':') },
    onLine: (line) => {
      for (const [pattern, step, fraction, message] of DEBOOTSTRAP_PHASES) if (pattern.test(line)) progress(step, fraction, message);
    },
  });
  trimTree(targetDir);
  progress('install', 1, 'rootfs ready');
}

/** Catches what dpkg's path-excludes miss (files written by maintainer scripts). */
function trimTree(root: string): void {
  for (const sub of ['usr/share/man', 'usr/share/locale', 'usr/share/info', 'var/cache/apt', 'var/lib/apt/lists']) {
    const dir = join(root, sub);
    if (!existsSync(dir)) continue;
    for (const name of readdirSync(dir))
      if (name !== 'partial' && name !== 'lock') rmSync(join(dir, name), { recursive: true, force: true });
  }
  const docs = join(root, 'usr/share/doc');
  if (!existsSync(docs)) return;
  for (const pkg of readdirSync(docs, { withFileTypes: true })) {
    if (!pkg.isDirectory()) continue;
    for (const name of readdirSync(join(docs, pkg.name)))
      if (name !== 'copyright') rmSync(join(docs, pkg.name, name), { recursive: true, force: true });
  }
}

/**
 * How a layer is stored. zstd at level 3 packs the Debian root: 1.4 s of CPU for 69 MiB, where
 * mksquashfs's default level 15 took 32 s for 60 MiB (and 101 s of a first build's wall time at
 * load 12); reading either costs the same. The coding agents' layer is read on every agent start, and a compressed one makes
 * the first start after boot pay for decompression: measured under load, Claude Code's first and
 * second start in the guest took 38.8 and 17.4 s from zstd (417 MiB), 24.6 and 9.3 s from lz4
 * (568 MiB), 17.7 and 16.7 s uncompressed (1,022 MiB).
 */
export type SquashCompression = 'zstd' | 'lz4' | 'none';

const COMPRESSION_ARGS: Record<SquashCompression, readonly string[]> = {
  zstd: ['-comp', 'zstd', '-Xcompression-level', '3'],
  lz4: ['-comp', 'lz4'],
  none: ['-noI', '-noD', '-noF', '-noX'],
};

/** mksquashfs's options for a compression: part of a layer's hash, so a new choice builds the layer afresh. */
export function compressionOptions(compression: SquashCompression): string {
  return COMPRESSION_ARGS[compression].join(' ');
}

/** A squashfs of `treeDir` at `outPath`; `what` names the tree in progress lines. */
export async function squashTree(
  treeDir: string,
  outPath: string,
  compression: SquashCompression,
  what: string,
  progress: StepProgress,
  signal?: AbortSignal,
): Promise<void> {
  progress(0, `packing ${what} (${compression})`);
  let last = -1;
  await runCommand('mksquashfs', [treeDir, outPath, ...COMPRESSION_ARGS[compression], '-noappend', '-quiet', '-progress'], {
    signal,
    onLine: (line) => {
      const match = /\s(\d+)\/(\d+)\s+(\d+)%/.exec(line);
      if (!match) return;
      const percent = Number(match[3]);
      if (percent === last) return;
      last = percent;
      progress(percent / 100, `packing ${what}: block ${match[1]}/${match[2]}`);
    },
  });
  progress(1, `${what} packed`);
}
