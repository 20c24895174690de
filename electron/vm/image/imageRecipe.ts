import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { guestImageKind, type ImageKind } from '../../contract/guestImages.ts';

export type { ImageKind } from '../../contract/guestImages.ts';

/** The recipe in build/guest/: plain files, so what the image is made of is readable without the code. */
export interface GuestRecipe {
  readonly kind: ImageKind;
  readonly dir: string;
  /** Every file the image depends on, name to contents; all of them go into the image hash. */
  readonly files: Readonly<Record<string, string>>;
  readonly initScript: string;
  readonly modules: readonly string[];
  readonly packages: readonly string[];
  readonly aptSources: readonly string[];
  readonly suite: string;
}

/** How one kind of image is built from the files in build/guest/ (names relative to it). */
export interface ImageRecipeEntry {
  /** The initramfs's /init. */
  readonly init: string;
  /** Kernel module lists it loads after modules.txt (which every image loads), in order. */
  readonly moreModules: readonly string[];
  /**
   * A Debian root file system: a squashfs attached read-only, the overlay's lower layer under the
   * session's own disk, built from these packages and apt sources (the first line's suite), with
   * the coding agents in it when the image carries them (electron/contract/guestImages.ts).
   * Without one, the image is its initramfs and the agent runs there.
   */
  readonly rootfs?: { readonly packages: string; readonly aptSources: string };
  /** How long a first build takes here and what it needs, for capsem doctor. */
  readonly firstBuild: string;
}

/** Every image kind's recipe; the compiler asks for one when a kind is added to the list. */
export const IMAGE_RECIPES: Readonly<Record<ImageKind, ImageRecipeEntry>> = {
  agent: {
    init: 'init-agent.sh',
    // The transparent network path needs netfilter.
    moreModules: ['modules-agent.txt'],
    rootfs: { packages: 'packages.txt', aptSources: 'sources.list' },
    firstBuild: '1-3 minutes, needs root, npm, deb.debian.org and the npm registry',
  },
  minimal: { init: 'init-minimal.sh', moreModules: [], firstBuild: 'seconds' },
};

/** Whether an image of `kind` has a read-only root file system beside its initramfs. */
export function hasRootfs(kind: ImageKind): boolean {
  return IMAGE_RECIPES[kind].rootfs !== undefined;
}

/** The kernel modules every image loads, before its entry's moreModules. */
const BASE_MODULES = 'modules.txt';
const COMMON_FILES = ['init-common.sh', BASE_MODULES];
/** The coding agents and the Node they run on, pinned by npm's lockfile (installed by imageCodingAgents.ts). */
export const AGENTS_PACKAGE = 'agents/package.json';
export const AGENTS_LOCK = 'agents/package-lock.json';

const INITRAMFS_TOOLS: Readonly<Record<string, string>> = { busybox: 'busybox-static', cpio: 'cpio', modinfo: 'kmod' };
const ROOTFS_TOOLS: Readonly<Record<string, string>> = { mmdebstrap: 'mmdebstrap', mksquashfs: 'squashfs-tools', 'mkfs.ext4': 'e2fsprogs' };

export interface BuildTools {
  /** Needed again whenever a start hashes the image's inputs afresh (a new kernel or agent): a built image cannot do without them. */
  readonly initramfs: Readonly<Record<string, string>>;
  /** Needed only to build the image's root file system. */
  readonly rootfs: Readonly<Record<string, string>>;
}

/** What building an image of `kind` runs on the host, command to the Debian package that installs it. */
export function buildTools(kind: ImageKind): BuildTools {
  return { initramfs: INITRAMFS_TOOLS, rootfs: hasRootfs(kind) ? ROOTFS_TOOLS : {} };
}

/** The recipe files an image of `kind` is made from, relative to the recipe folder. */
export function recipeFileNames(kind: ImageKind): readonly string[] {
  const entry = IMAGE_RECIPES[kind];
  return [
    ...COMMON_FILES,
    entry.init,
    ...(entry.rootfs ? [entry.rootfs.packages, entry.rootfs.aptSources] : []),
    ...entry.moreModules,
    ...(guestImageKind(kind).codingAgents ? [AGENTS_PACKAGE, AGENTS_LOCK] : []),
  ];
}

export function defaultRecipeDir(): string {
  return fileURLToPath(new URL('../../../build/guest/', import.meta.url));
}

function listLines(text: string): string[] {
  return text
    .split('\n')
    .map((line) => line.replace(/#.*$/, '').trim())
    .filter((line) => line.length > 0);
}

export function readRecipe(kind: ImageKind, dir: string = defaultRecipeDir()): GuestRecipe {
  const entry = IMAGE_RECIPES[kind];
  // The coding agents are installed into the root file system; there is nowhere else to put them.
  if (guestImageKind(kind).codingAgents && !entry.rootfs)
    throw new Error(`the ${kind} image carries the coding agents, so its recipe entry in imageRecipe.ts needs a rootfs`);
  const files: Record<string, string> = {};
  for (const name of recipeFileNames(kind)) {
    try {
      files[name] = readFileSync(join(dir, name), 'utf8');
    } catch (err) {
      throw new Error(`guest image recipe file ${join(dir, name)} cannot be read: ${(err as Error).message}`);
    }
  }
  const aptSources = entry.rootfs ? listLines(files[entry.rootfs.aptSources]!) : [];
  const suite = aptSources[0]?.split(/\s+/)[2] ?? '';
  if (entry.rootfs && suite.length === 0) throw new Error(`${join(dir, entry.rootfs.aptSources)} has no "deb URL SUITE ..." line`);
  return {
    kind,
    dir,
    files,
    initScript: files[entry.init]!,
    modules: [BASE_MODULES, ...entry.moreModules].flatMap((name) => listLines(files[name]!)),
    packages: entry.rootfs ? listLines(files[entry.rootfs.packages]!) : [],
    aptSources,
    suite,
  };
}
