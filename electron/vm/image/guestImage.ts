import { createHash, randomBytes } from 'node:crypto';
import {
  closeSync,
  copyFileSync,
  existsSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import { basename, join } from 'node:path';
import { ensureHomeRoot, ensurePrivateDir, type CapsemHome } from '../../store/paths.ts';
import { guestNodeProxyFiles, type GuestFile } from './guestNodeProxy.ts';
import { fingerprint, knownHash, rememberHash } from './imageFingerprint.ts';
import { buildInitramfs, findBusybox, sharedLibraries } from './imageInitramfs.ts';
import { findHostKernel, resolveModules, type HostKernel } from './imageKernel.ts';
import {
  describeFiles,
  MANIFEST_NAME,
  readManifest,
  sha256File,
  verifyManifestFiles,
  writeManifest,
  type ImageManifest,
} from './imageManifest.ts';
import { guestImageKind } from '../../contract/guestImages.ts';
import { installCodingAgents } from './imageCodingAgents.ts';
import {
  AGENTS_LOCK,
  AGENTS_PACKAGE,
  defaultRecipeDir,
  hasRootfs,
  IMAGE_RECIPES,
  readRecipe,
  recipeFileNames,
  type GuestRecipe,
  type ImageKind,
} from './imageRecipe.ts';
import { debootstrap, removeBuildTree, squashRootfs } from './imageRootfs.ts';

export {
  createSessionDisk,
  ensureSessionDisk,
  writeSessionDiskCa,
  DEFAULT_SESSION_DISK_BYTES,
  SESSION_DISK_CA_PATH,
} from './sessionDiskImage.ts';
export { findHostKernel, type HostKernel } from './imageKernel.ts';
export type { ImageKind } from './imageRecipe.ts';

/** Bump when the code changes what an image contains or how it is laid out: it is part of the hash. */
const BUILDER_VERSION = '1';

/** Virtio-blk serials the agent image's init finds its disks by (build/guest/init-agent.sh). */
export const ROOT_DISK_SERIAL = 'capsem-root';
export const SESSION_DISK_SERIAL = 'capsem-session';

const KERNEL_FILE = 'vmlinuz';
const INITRD_FILE = 'initrd.img';
const ROOTFS_FILE = 'rootfs.sqfs';

export interface GuestImage {
  readonly kind: ImageKind;
  readonly dir: string;
  readonly kernel: string;
  readonly initrd: string;
  /** The read-only root (squashfs) of an image whose recipe has one, attached as virtio-blk with serial ROOT_DISK_SERIAL. */
  readonly rootfs?: string;
  readonly hash: string;
}

export type ImageStage = 'inputs' | 'cache' | 'kernel' | 'debootstrap' | 'agents' | 'squashfs' | 'initramfs' | 'manifest' | 'done';

/** One report from a build: its stage, a line for people, and the whole build's fraction done (0..1). */
export interface ImageProgress {
  readonly stage: ImageStage;
  readonly message: string;
  readonly fraction: number;
}

export interface EnsureImageOptions {
  /** The guest agent to put in the image (native/agent/build/capsem-agent); part of the hash. */
  readonly agentBinary: string;
  readonly onProgress?: (progress: ImageProgress) => void;
  readonly signal?: AbortSignal;
  /** Defaults to the repository's build/guest/. */
  readonly recipeDir?: string;
  readonly kernel?: HostKernel;
}

// Where each stage sits in the whole job, so one progress bar covers the build end to end: an
// image with a root file system spends most of it there.
const STAGE_SPANS: Record<'initramfsOnly' | 'withRootfs', Partial<Record<ImageStage, [number, number]>>> = {
  initramfsOnly: { inputs: [0, 0.1], kernel: [0.1, 0.2], initramfs: [0.2, 0.85], manifest: [0.85, 1] },
  withRootfs: {
    inputs: [0, 0.02],
    kernel: [0.02, 0.03],
    debootstrap: [0.03, 0.3],
    agents: [0.3, 0.45],
    squashfs: [0.45, 0.9],
    initramfs: [0.9, 0.95],
    manifest: [0.95, 1],
  },
};

function sha256Text(text: string | Uint8Array): string {
  return createHash('sha256').update(text).digest('hex');
}

function imagesDir(home: CapsemHome): string {
  return join(home.root, 'images');
}

function imageDirName(kind: ImageKind, hash: string): string {
  return `${kind}-${hash.slice(0, 16)}`;
}

/** Node ignores the proxy variables; it is in the image only with the coding agents, who pin it. */
function nodeProxyFiles(kind: ImageKind): GuestFile[] {
  return guestImageKind(kind).codingAgents ? guestNodeProxyFiles() : [];
}

function imageFromManifest(dir: string, manifest: ImageManifest): GuestImage {
  return {
    kind: manifest.kind,
    dir,
    kernel: join(dir, KERNEL_FILE),
    initrd: join(dir, INITRD_FILE),
    ...(hasRootfs(manifest.kind) ? { rootfs: join(dir, ROOTFS_FILE) } : {}),
    hash: manifest.hash,
  };
}

interface ImageInputs {
  readonly recipe: GuestRecipe;
  readonly kernel: HostKernel;
  readonly modules: Awaited<ReturnType<typeof resolveModules>>;
  readonly busybox: ReturnType<typeof findBusybox>;
  readonly agentLibraries: readonly string[];
  readonly extraFiles: readonly GuestFile[];
  /** Everything that determines the image, name to value; hashed in a fixed order. */
  readonly record: Record<string, string>;
  readonly hash: string;
  readonly rootfsHash?: string;
}

function hashRecord(record: Record<string, string>): string {
  return sha256Text(
    JSON.stringify(
      Object.keys(record)
        .sort()
        .map((key) => [key, record[key]]),
    ),
  );
}

/** Size and mtime of every file gatherInputs reads, with what else decides the image. */
function inputsFingerprint(kind: ImageKind, options: EnsureImageOptions): string {
  const recipeDir = options.recipeDir ?? defaultRecipeDir();
  const kernel = options.kernel ?? findHostKernel();
  const busybox = ['/bin/busybox', '/usr/bin/busybox'].find((p) => existsSync(p)) ?? '';
  const files = [
    ...recipeFileNames(kind).map((name) => join(recipeDir, name)),
    kernel.path,
    join(kernel.modulesDir, 'modules.dep'),
    busybox,
    options.agentBinary,
    ...nodeProxyFiles(kind).map((f) => f.hostPath),
  ];
  return fingerprint([BUILDER_VERSION, kind, kernel.version], files);
}

async function gatherInputs(kind: ImageKind, options: EnsureImageOptions): Promise<ImageInputs> {
  if (!existsSync(options.agentBinary)) {
    throw new Error(`the guest agent ${options.agentBinary} does not exist: build it first (make -C native/agent)`);
  }
  const recipe = readRecipe(kind, options.recipeDir);
  const kernel = options.kernel ?? findHostKernel();
  const busybox = findBusybox();
  const modules = await resolveModules(kernel, recipe.modules);
  // Without a root file system the agent runs from the initramfs, with no libc beside it.
  const agentLibraries = hasRootfs(kind) ? [] : await sharedLibraries(options.agentBinary);
  const extraFiles = nodeProxyFiles(kind);
  const record: Record<string, string> = {
    builder: BUILDER_VERSION,
    kind,
    kernelVersion: kernel.version,
    kernel: await sha256File(kernel.path),
    busybox: busybox.version,
    busyboxSha256: await sha256File(busybox.path),
    agent: await sha256File(options.agentBinary),
  };
  for (const [name, text] of Object.entries(recipe.files)) record[`recipe:${name}`] = sha256Text(text);
  for (const mod of modules) record[`module:${mod.name}`] = await sha256File(mod.path);
  for (const lib of agentLibraries) record[`library:${lib}`] = await sha256File(lib);
  for (const extra of extraFiles) record[`extra:${extra.guestPath}`] = await sha256File(extra.hostPath);
  let rootfsHash: string | undefined;
  const rootfs = IMAGE_RECIPES[kind].rootfs;
  if (rootfs) {
    // The squashfs depends on the package recipe and the coding agents only, not on the kernel or agent.
    rootfsHash = hashRecord({
      builder: BUILDER_VERSION,
      packages: recipe.files[rootfs.packages]!,
      sources: recipe.files[rootfs.aptSources]!,
      ...(guestImageKind(kind).codingAgents
        ? { agentsPackage: recipe.files[AGENTS_PACKAGE]!, agentsLock: recipe.files[AGENTS_LOCK]! }
        : {}),
    });
    record.rootfs = rootfsHash;
  }
  return {
    recipe,
    kernel,
    modules,
    busybox,
    agentLibraries,
    extraFiles,
    record,
    hash: hashRecord(record),
    ...(rootfsHash ? { rootfsHash } : {}),
  };
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A build that died (killed, power cut) leaves its .tmp- folder; nobody else ever renames it. */
function removeAbandonedBuilds(root: string): void {
  for (const name of readdirSync(root)) {
    const match = /^\.tmp-.*-(\d+)-[0-9a-f]+$/.exec(name);
    if (match && !processAlive(Number(match[1]))) removeBuildTree(join(root, name));
  }
}

/** A squashfs of an existing image built from the same packages, checked against its manifest. */
async function reusableRootfs(root: string, rootfsHash: string): Promise<string | undefined> {
  for (const name of readdirSync(root)) {
    if (name.startsWith('.') || !existsSync(join(root, name, MANIFEST_NAME))) continue;
    try {
      const manifest = readManifest(join(root, name));
      const expected = manifest.files[ROOTFS_FILE];
      const path = join(root, name, ROOTFS_FILE);
      if (manifest.rootfsHash === rootfsHash && expected && (await sha256File(path)) === expected.sha256) return path;
    } catch {
      // A broken neighbour is not ours to fix; build afresh.
    }
  }
  return undefined;
}

function fsyncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

async function build(kind: ImageKind, inputs: ImageInputs, home: CapsemHome, options: EnsureImageOptions): Promise<GuestImage> {
  const root = imagesDir(home);
  const finalDir = join(root, imageDirName(kind, inputs.hash));
  const tmp = join(root, `.tmp-${imageDirName(kind, inputs.hash)}-${process.pid}-${randomBytes(4).toString('hex')}`);
  const report = (stage: ImageStage, fraction: number, message: string): void => {
    const [from, to] = STAGE_SPANS[hasRootfs(kind) ? 'withRootfs' : 'initramfsOnly'][stage] ?? [0, 1];
    options.onProgress?.({ stage, message, fraction: from + (to - from) * Math.min(1, Math.max(0, fraction)) });
  };
  mkdirSync(tmp, { mode: 0o755 });
  try {
    report('kernel', 0, `kernel ${inputs.kernel.version}`);
    copyFileSync(inputs.kernel.path, join(tmp, KERNEL_FILE));
    const files = [KERNEL_FILE, INITRD_FILE];
    if (hasRootfs(kind)) {
      const reuse = await reusableRootfs(root, inputs.rootfsHash!);
      if (reuse) {
        report('squashfs', 1, `reusing the rootfs of ${basename(join(reuse, '..'))}`);
        try {
          linkSync(reuse, join(tmp, ROOTFS_FILE));
        } catch {
          copyFileSync(reuse, join(tmp, ROOTFS_FILE));
        }
      } else {
        const tree = join(tmp, 'rootfs-tree');
        await debootstrap(inputs.recipe, tree, (f, m) => report('debootstrap', f, m), options.signal);
        if (guestImageKind(kind).codingAgents)
          await installCodingAgents(inputs.recipe, tree, (f, m) => report('agents', f, m), options.signal);
        await squashRootfs(tree, join(tmp, ROOTFS_FILE), (f, m) => report('squashfs', f, m), options.signal);
        removeBuildTree(tree);
      }
      files.push(ROOTFS_FILE);
    }
    report('initramfs', 0, `busybox, ${inputs.modules.length} kernel modules, agent`);
    buildInitramfs(
      {
        kind,
        recipe: inputs.recipe,
        busybox: inputs.busybox,
        modules: inputs.modules,
        agentBinary: options.agentBinary,
        agentLibraries: inputs.agentLibraries,
        extraFiles: inputs.extraFiles,
      },
      join(tmp, INITRD_FILE),
    );
    report('manifest', 0, 'hashing files');
    const manifest: ImageManifest = {
      format: 1,
      kind,
      hash: inputs.hash,
      createdAt: new Date().toISOString(),
      inputs: inputs.record,
      ...(inputs.rootfsHash ? { rootfsHash: inputs.rootfsHash } : {}),
      files: await describeFiles(tmp, files),
    };
    writeManifest(tmp, manifest);
    // Durable before visible: the rename is what makes the image look complete.
    for (const name of [...files, MANIFEST_NAME]) fsyncPath(join(tmp, name));
    fsyncPath(tmp);
    try {
      renameSync(tmp, finalDir);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw err;
      // Another build of the same image finished first; theirs is as good as ours.
      rmSync(tmp, { recursive: true, force: true });
      return imageFromManifest(finalDir, readManifest(finalDir));
    }
    fsyncPath(root);
    return imageFromManifest(finalDir, manifest);
  } catch (err) {
    removeBuildTree(tmp);
    throw err;
  }
}

const buildsInFlight = new Map<string, Promise<GuestImage>>();

/**
 * The image for `kind`, from the cache under CAPSEM_HOME/images/<kind>-<hash>/ when its recipe,
 * kernel, busybox and agent are unchanged, else built (the agent image needs root and network).
 * Call verifyImage before booting it.
 */
export async function ensureImage(home: CapsemHome, kind: ImageKind, options: EnsureImageOptions): Promise<GuestImage> {
  const report = (stage: ImageStage, fraction: number, message: string): void => options.onProgress?.({ stage, message, fraction });
  ensureHomeRoot(home);
  const root = imagesDir(home);
  ensurePrivateDir(root);
  const print = inputsFingerprint(kind, options);
  const known = knownHash(root, kind, print);
  if (known !== null && existsSync(join(root, imageDirName(kind, known), MANIFEST_NAME))) {
    const dir = join(root, imageDirName(kind, known));
    const manifest = readManifest(dir);
    if (manifest.hash === known) {
      report('cache', 1, `cached ${basename(dir)}`);
      return imageFromManifest(dir, manifest);
    }
  }
  report('inputs', 0, 'hashing the recipe, kernel, busybox and agent');
  const inputs = await gatherInputs(kind, options);
  const dir = join(root, imageDirName(kind, inputs.hash));
  if (existsSync(join(dir, MANIFEST_NAME))) {
    const manifest = readManifest(dir);
    if (manifest.hash !== inputs.hash)
      throw new Error(`guest image ${dir} holds a different image (hash ${manifest.hash}); delete it to rebuild`);
    rememberHash(root, kind, print, inputs.hash);
    report('cache', 1, `cached ${basename(dir)}`);
    return imageFromManifest(dir, manifest);
  }
  removeAbandonedBuilds(root);
  let pending = buildsInFlight.get(dir);
  if (!pending) {
    pending = build(kind, inputs, home, options).finally(() => buildsInFlight.delete(dir));
    buildsInFlight.set(dir, pending);
  }
  const image = await pending;
  rememberHash(root, kind, print, inputs.hash);
  report('done', 1, `built ${basename(image.dir)}`);
  return image;
}

/**
 * The hash of the image `ensureImage` would give for `kind` when it is already built and its
 * inputs are unchanged, else null: read from the cache alone, never building (nor hashing the
 * inputs in full, which a first start after a change does).
 */
export function cachedImageHash(
  home: CapsemHome,
  kind: ImageKind,
  options: Pick<EnsureImageOptions, 'agentBinary' | 'recipeDir' | 'kernel'>,
): string | null {
  const root = imagesDir(home);
  if (!existsSync(root)) return null;
  const known = knownHash(root, kind, inputsFingerprint(kind, options));
  return known !== null && existsSync(join(root, imageDirName(kind, known), MANIFEST_NAME)) ? known : null;
}

/**
 * Recomputes the SHA-256 of every file the manifest lists and refuses any mismatch, naming the
 * file. Also refuses a manifest that does not belong to its folder or lacks a file the kind needs.
 */
export async function verifyImage(image: Pick<GuestImage, 'dir'>): Promise<GuestImage> {
  const manifest = readManifest(image.dir);
  if (basename(image.dir) !== imageDirName(manifest.kind, manifest.hash)) {
    throw new Error(
      `guest image manifest ${join(image.dir, MANIFEST_NAME)} is for ${imageDirName(manifest.kind, manifest.hash)}, not ${basename(image.dir)}`,
    );
  }
  const needed = hasRootfs(manifest.kind) ? [KERNEL_FILE, INITRD_FILE, ROOTFS_FILE] : [KERNEL_FILE, INITRD_FILE];
  for (const name of needed) {
    if (!manifest.files[name]) throw new Error(`guest image manifest ${join(image.dir, MANIFEST_NAME)} does not list ${name}`);
  }
  await verifyManifestFiles(image.dir, manifest);
  return imageFromManifest(image.dir, manifest);
}

export interface ImageDisk {
  readonly path: string;
  readonly readOnly: boolean;
  /** The virtio-blk serial (`-device virtio-blk-device,drive=...,serial=...`) init finds it by. */
  readonly serial: string;
}

/**
 * The two disks of an image with a root file system. Init looks them up by serial, not by
 * /dev/vdX, so neither the launcher's disk order nor the kernel's probe order can swap the rootfs
 * and the session disk. The rootfs is shared read-only by all sessions; the session disk comes
 * from createSessionDisk.
 */
export function imageDisks(image: GuestImage, sessionDisk: string): ImageDisk[] {
  if (!image.rootfs) throw new Error(`the ${image.kind} image boots from its initramfs and takes no disks`);
  return [
    { path: image.rootfs, readOnly: true, serial: ROOT_DISK_SERIAL },
    { path: sessionDisk, readOnly: false, serial: SESSION_DISK_SERIAL },
  ];
}

/** Size on disk of an image's files, for reports. */
export function imageSizes(image: GuestImage): Record<string, number> {
  const sizes: Record<string, number> = {};
  for (const path of [image.kernel, image.initrd, image.rootfs]) if (path) sizes[basename(path)] = statSync(path).size;
  return sizes;
}
