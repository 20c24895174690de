import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { runCommand } from './imageCommand.ts';
import type { GuestRecipe } from './imageRecipe.ts';

/** Progress within one step: a fraction of that step, and a line for people. */
export type StepProgress = (fraction: number, message: string) => void;

// mmdebstrap announces its phases with "I: ..." lines; these are their rough shares of its run time.
const DEBOOTSTRAP_PHASES: readonly [RegExp, number, string][] = [
  [/running apt-get update/, 0.05, 'updating package lists'],
  [/downloading packages/, 0.15, 'downloading packages'],
  [/extracting archives/, 0.4, 'extracting essential packages'],
  [/installing essential packages/, 0.5, 'installing essential packages'],
  [/installing remaining packages/, 0.65, 'installing packages'],
  [/cleaning package lists/, 0.95, 'cleaning up'],
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
  for (const mountPoint of mountsUnder(dir)) spawnSync('umount', ['--lazy', mountPoint], { stdio: 'ignore' });
  const left = mountsUnder(dir);
  if (left.length > 0) throw new Error(`not deleting ${dir}: ${left[0]} is still mounted; unmount it and delete the folder by hand`);
  rmSync(dir, { recursive: true, force: true });
}

export function requireRoot(what: string): void {
  if (typeof process.getuid === 'function' && process.getuid() !== 0) {
    throw new Error(
      `building ${what} needs root: mmdebstrap creates device nodes and files owned by other users in the rootfs. Run the build once as root (sudo), or use the minimal image`,
    );
  }
}

/** A Debian minbase tree with the recipe's packages, built in `targetDir` (which must not exist). */
export async function debootstrap(recipe: GuestRecipe, targetDir: string, progress: StepProgress, signal?: AbortSignal): Promise<void> {
  requireRoot('the agent image');
  const args = [
    '--mode=root',
    '--variant=minbase',
    '--format=directory',
    `--include=${recipe.packages.join(',')}`,
    '--aptopt=Acquire::Retries "3"',
    ...TRIM_DPKG_OPTIONS.map((opt) => `--dpkgopt=${opt}`),
    recipe.suite,
    targetDir,
    ...recipe.aptSources,
  ];
  progress(0, `mmdebstrap ${recipe.suite} with ${recipe.packages.length} packages`);
  await runCommand('mmdebstrap', args, {
    signal,
    onLine: (line) => {
      for (const [pattern, fraction, message] of DEBOOTSTRAP_PHASES) if (pattern.test(line)) progress(fraction, message);
    },
  });
  trimTree(targetDir);
  progress(1, 'rootfs ready');
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

/** zstd: about 37 s for this tree on 2 cores and a 15% larger image than xz, which takes 61 s (machine.md §3). */
export async function squashRootfs(treeDir: string, outPath: string, progress: StepProgress, signal?: AbortSignal): Promise<void> {
  progress(0, 'compressing the rootfs');
  let last = -1;
  await runCommand('mksquashfs', [treeDir, outPath, '-comp', 'zstd', '-noappend', '-quiet', '-progress'], {
    signal,
    onLine: (line) => {
      const match = /\s(\d+)\/(\d+)\s+(\d+)%/.exec(line);
      if (!match) return;
      const percent = Number(match[3]);
      if (percent === last) return;
      last = percent;
      progress(percent / 100, `compressing the rootfs: block ${match[1]}/${match[2]}`);
    },
  });
  progress(1, 'squashfs ready');
}
