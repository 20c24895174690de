import { createHash, randomBytes } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { BuildStage } from '../../contract/buildStages.ts';
import { imageCacheDir, legacyImagesDir, type CapsemHome } from '../../store/paths.ts';
import { holderAlive } from '../../platform/lockFile.ts';
import { isSameProcessAlive } from '../../platform/processIdentity.ts';
import { BuildStages } from './buildProgress.ts';
import { acquireBuildLock, readBuildProgress, type HeldBuildLock } from './imageBuildLock.ts';
import { ensureImageCache, linkOrCopy } from './imageCache.ts';
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
import { compressionOptions, debootstrap, discardBuildTree, removeBuildTree, squashTree, type SquashCompression } from './imageRootfs.ts';

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
const BUILDER_VERSION = '2';

/** Virtio-blk serials the agent image's init finds its disks by (build/guest/init-agent.sh). */
export const ROOT_DISK_SERIAL = 'capsem-root';
export const AGENTS_DISK_SERIAL = 'capsem-agents';
export const SESSION_DISK_SERIAL = 'capsem-session';

const KERNEL_FILE = 'vmlinuz';
const INITRD_FILE = 'initrd.img';
const ROOTFS_FILE = 'rootfs.sqfs';
const AGENTS_FILE = 'agents.sqfs';
/**
 * The coding agents' layer is read on every agent start: stored uncompressed, Claude Code's first
 * start after boot costs what its later ones do (imageRootfs.ts has the figures for each choice).
 */
const AGENTS_COMPRESSION: SquashCompression = 'none';
const ROOTFS_COMPRESSION: SquashCompression = 'zstd';

export interface GuestImage {
  readonly kind: ImageKind;
  readonly dir: string;
  readonly kernel: string;
  readonly initrd: string;
  /** The read-only root (squashfs) of an image whose recipe has one, attached as virtio-blk with serial ROOT_DISK_SERIAL. */
  readonly rootfs?: string;
  /** The coding agents' tree (squashfs), laid over the rootfs, attached with serial AGENTS_DISK_SERIAL. */
  readonly agents?: string;
  readonly hash: string;
}

export type ImageStage =
  | 'inputs'
  | 'cache'
  | 'waiting'
  | 'kernel'
  | 'download'
  | 'debootstrap'
  | 'agents'
  | 'squashfs'
  | 'agentsSquashfs'
  | 'initramfs'
  | 'manifest'
  | 'done';

/**
 * One report from a build: the stage that sent it, a line for people, the whole build's fraction
 * done (0..1), that stage's own, and every stage of the build with its state (several run at once).
 */
export interface ImageProgress {
  readonly stage: ImageStage;
  readonly message: string;
  readonly fraction: number;
  readonly stageFraction: number;
  readonly build: readonly BuildStage[];
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

// Each stage's share of the whole job, so one progress bar covers the build end to end. The
// Debian root (download and install, then zstd) and the coding agents (npm ci, then packing) are
// built side by side, so the bar is the weighted sum of every stage's own fraction.
const STAGE_WEIGHTS: Record<'initramfsOnly' | 'withRootfs', Partial<Record<ImageStage, number>>> = {
  initramfsOnly: { inputs: 0.1, kernel: 0.1, initramfs: 0.65, manifest: 0.15 },
  withRootfs: {
    inputs: 0.02,
    kernel: 0.01,
    download: 0.15,
    debootstrap: 0.25,
    agents: 0.15,
    squashfs: 0.2,
    agentsSquashfs: 0.12,
    initramfs: 0.05,
    manifest: 0.05,
  },
};

function sha256Text(text: string | Uint8Array): string {
  return createHash('sha256').update(text).digest('hex');
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
    ...(manifest.agentsHash ? { agents: join(dir, AGENTS_FILE) } : {}),
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
  readonly agentsHash?: string;
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
  // Each layer depends on its own recipe only, not on the kernel, the agent or the other layer.
  let rootfsHash: string | undefined;
  let agentsHash: string | undefined;
  const rootfs = IMAGE_RECIPES[kind].rootfs;
  if (rootfs) {
    rootfsHash = hashRecord({
      builder: BUILDER_VERSION,
      packages: recipe.files[rootfs.packages]!,
      sources: recipe.files[rootfs.aptSources]!,
      compression: compressionOptions(ROOTFS_COMPRESSION),
    });
    record.rootfs = rootfsHash;
  }
  if (rootfs && guestImageKind(kind).codingAgents) {
    agentsHash = hashRecord({
      builder: BUILDER_VERSION,
      agentsPackage: recipe.files[AGENTS_PACKAGE]!,
      agentsLock: recipe.files[AGENTS_LOCK]!,
      compression: compressionOptions(AGENTS_COMPRESSION),
    });
    record.agents = agentsHash;
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
    ...(agentsHash ? { agentsHash } : {}),
  };
}

/**
 * A build that died (killed, power cut) leaves its .tmp- folder, and a process that exits while
 * deleting a discarded tree leaves its .tmp-discarded- one; nobody else ever renames either.
 */
function removeAbandonedBuilds(root: string): void {
  for (const name of readdirSync(root)) {
    const match = /^\.tmp-.*-(\d+)-[0-9a-f]+$/.exec(name);
    if (match && !isSameProcessAlive(Number(match[1]), null)) removeBuildTree(join(root, name));
  }
}

/**
 * `file` of the first image in the cache whose manifest `wants` and whose copy still matches that
 * manifest (checked as a boot checks it: hashed only when changed since it was last hashed).
 */
async function neighbourFile(root: string, file: string, wants: (manifest: ImageManifest) => boolean): Promise<string | undefined> {
  for (const name of readdirSync(root)) {
    const dir = join(root, name);
    if (name.startsWith('.') || !existsSync(join(dir, MANIFEST_NAME))) continue;
    try {
      const manifest = readManifest(dir);
      const expected = manifest.files[file];
      if (!expected || !wants(manifest)) continue;
      await verifyManifestFiles(dir, { ...manifest, files: { [file]: expected } });
      return join(dir, file);
    } catch {
      // A broken neighbour is not ours to fix; build or copy afresh.
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

/** One read-only layer of the image: where its file comes from when no neighbour has it. */
interface Layer {
  readonly file: string;
  readonly key: 'rootfsHash' | 'agentsHash';
  readonly hash: string;
  /** Its stages: filling the tree (one or more steps, in order), then packing it. */
  readonly fill: readonly ImageStage[];
  readonly pack: ImageStage;
  readonly what: string;
  readonly compression: SquashCompression;
  /** Fills `tree`, reporting progress within its `fill` stage number `step`. */
  readonly populate: (
    tree: string,
    progress: (step: number, fraction: number, message: string) => void,
    signal: AbortSignal,
  ) => Promise<void>;
}

function imageLayers(kind: ImageKind, inputs: ImageInputs): Layer[] {
  const layers: Layer[] = [];
  if (inputs.rootfsHash)
    layers.push({
      file: ROOTFS_FILE,
      key: 'rootfsHash',
      hash: inputs.rootfsHash,
      fill: ['download', 'debootstrap'],
      pack: 'squashfs',
      what: 'the Debian root',
      compression: ROOTFS_COMPRESSION,
      populate: (tree, progress, signal) =>
        debootstrap(inputs.recipe, tree, (step, fraction, message) => progress(step === 'download' ? 0 : 1, fraction, message), signal),
    });
  if (inputs.agentsHash)
    layers.push({
      file: AGENTS_FILE,
      key: 'agentsHash',
      hash: inputs.agentsHash,
      fill: ['agents'],
      pack: 'agentsSquashfs',
      what: 'the coding agents',
      compression: AGENTS_COMPRESSION,
      populate: async (tree, progress, signal) => {
        mkdirSync(tree, { mode: 0o755 });
        await installCodingAgents(inputs.recipe, tree, (fraction, message) => progress(0, fraction, message), signal);
      },
    });
  return layers;
}

/**
 * Puts every layer in `tmp`: linked from a neighbour image that has it, else built, all side by
 * side; each tree is packed as soon as it is filled and deleted in the background. The first
 * failure stops the others, and is what is thrown once they have stopped.
 */
async function buildLayers(
  layers: readonly Layer[],
  root: string,
  tmp: string,
  stages: BuildStages<ImageStage>,
  outer?: AbortSignal,
): Promise<void> {
  const stop = new AbortController();
  const signal = outer ? AbortSignal.any([outer, stop.signal]) : stop.signal;
  let failure: unknown;
  const one = async (layer: Layer): Promise<void> => {
    const reuse = await neighbourFile(root, layer.file, (manifest) => manifest[layer.key] === layer.hash);
    if (reuse) {
      const message = `reusing ${layer.what} of ${basename(join(reuse, '..'))}`;
      for (const stage of [...layer.fill, layer.pack]) stages.done(stage, message);
      linkOrCopy(reuse, join(tmp, layer.file));
      return;
    }
    const tree = join(tmp, `${layer.file}-tree`);
    await layer.populate(
      tree,
      (step, fraction, message) => {
        for (const before of layer.fill.slice(0, step)) stages.done(before);
        stages.report(layer.fill[step]!, fraction, message);
      },
      signal,
    );
    for (const stage of layer.fill) stages.done(stage);
    await squashTree(tree, join(tmp, layer.file), layer.compression, layer.what, (f, m) => stages.report(layer.pack, f, m), signal);
    stages.done(layer.pack);
    discardBuildTree(tree, root);
  };
  await Promise.all(
    layers.map((layer) =>
      one(layer).catch((err: unknown) => {
        if (failure === undefined) failure = err;
        stop.abort();
      }),
    ),
  );
  if (failure !== undefined) throw failure;
}

async function build(
  kind: ImageKind,
  inputs: ImageInputs,
  root: string,
  stages: BuildStages<ImageStage>,
  options: EnsureImageOptions,
): Promise<GuestImage> {
  const finalDir = join(root, imageDirName(kind, inputs.hash));
  const tmp = join(root, `.tmp-${imageDirName(kind, inputs.hash)}-${process.pid}-${randomBytes(4).toString('hex')}`);
  mkdirSync(tmp, { mode: 0o755 });
  try {
    stages.report('kernel', 0, `kernel ${inputs.kernel.version}`);
    // A kernel an existing image holds with the same hash is linked, not copied again, when an app update changes only the rest.
    const kernelHash = inputs.record.kernel!;
    linkOrCopy(
      (await neighbourFile(root, KERNEL_FILE, (manifest) => manifest.files[KERNEL_FILE]?.sha256 === kernelHash)) ?? inputs.kernel.path,
      join(tmp, KERNEL_FILE),
    );
    stages.done('kernel');
    const layers = imageLayers(kind, inputs);
    await buildLayers(layers, root, tmp, stages, options.signal);
    const files = [KERNEL_FILE, INITRD_FILE, ...layers.map((layer) => layer.file)];
    stages.report('initramfs', 0, `busybox, ${inputs.modules.length} kernel modules, agent`);
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
    stages.done('initramfs');
    stages.report('manifest', 0, 'hashing files');
    const manifest: ImageManifest = {
      format: 1,
      kind,
      hash: inputs.hash,
      createdAt: new Date().toISOString(),
      inputs: inputs.record,
      ...(inputs.rootfsHash ? { rootfsHash: inputs.rootfsHash } : {}),
      ...(inputs.agentsHash ? { agentsHash: inputs.agentsHash } : {}),
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
    stages.done('manifest');
    return imageFromManifest(finalDir, manifest);
  } catch (err) {
    removeBuildTree(tmp);
    throw err;
  }
}

/** The finished image in `dir`, or null when there is none yet; refuses a folder that holds another. */
function builtImage(dir: string, hash: string): GuestImage | null {
  if (!existsSync(join(dir, MANIFEST_NAME))) return null;
  const manifest = readManifest(dir);
  if (manifest.hash !== hash) throw new Error(`guest image ${dir} holds a different image (hash ${manifest.hash}); delete it to rebuild`);
  return imageFromManifest(dir, manifest);
}

/** How often a process waiting for another's build looks at it. */
const WAIT_POLL_MS = 500;

/** Where a build publishes its progress for other processes once it holds the lock. */
interface ProgressOutlet {
  lock: HeldBuildLock | null;
}

/**
 * Builds the image under the user's build lock for its kind, or waits for the process that holds
 * it (showing its progress) and uses what it built; takes over when that process dies.
 */
async function buildOnce(
  kind: ImageKind,
  inputs: ImageInputs,
  root: string,
  stages: BuildStages<ImageStage>,
  outlet: ProgressOutlet,
  options: EnsureImageOptions,
): Promise<GuestImage> {
  const dir = join(root, imageDirName(kind, inputs.hash));
  for (;;) {
    options.signal?.throwIfAborted();
    const taken = await acquireBuildLock(root, kind);
    if (taken.acquired) {
      outlet.lock = taken.lock;
      try {
        const built = builtImage(dir, inputs.hash);
        if (built) return built;
        removeAbandonedBuilds(root);
        return await build(kind, inputs, root, stages, options);
      } finally {
        outlet.lock = null;
        taken.lock.release();
      }
    }
    const waiting = `waiting for another build of the ${guestImageKind(kind).label} (pid ${taken.holder.pid})`;
    while (!existsSync(join(dir, MANIFEST_NAME)) && holderAlive(taken.holder)) {
      const theirs = readBuildProgress(root, kind);
      options.onProgress?.({
        stage: 'waiting',
        message: theirs ? `${waiting}: ${theirs.message}` : waiting,
        fraction: theirs?.fraction ?? 0,
        stageFraction: theirs?.stageFraction ?? 0,
        build: theirs?.build ?? [],
      });
      await sleep(WAIT_POLL_MS, undefined, options.signal ? { signal: options.signal } : {});
    }
    const built = builtImage(dir, inputs.hash);
    if (built) return built;
  }
}

const buildsInFlight = new Map<string, Promise<GuestImage>>();

/**
 * The image for `kind`, from the user's image cache (imageCacheDir: shared by every CAPSEM_HOME and
 * app version) under <kind>-<hash>/ when its recipe, kernel, busybox and agent are unchanged, else
 * built (the agent image needs root and network), by one process at a time. Call verifyImage
 * before booting it.
 */
export async function ensureImage(home: CapsemHome, kind: ImageKind, options: EnsureImageOptions): Promise<GuestImage> {
  const cached = (dir: string): void =>
    options.onProgress?.({ stage: 'cache', message: `cached ${basename(dir)}`, fraction: 1, stageFraction: 1, build: [] });
  const root = imageCacheDir();
  ensureImageCache(root, legacyImagesDir(home));
  const print = inputsFingerprint(kind, options);
  const known = knownHash(root, kind, print);
  if (known !== null && existsSync(join(root, imageDirName(kind, known), MANIFEST_NAME))) {
    const dir = join(root, imageDirName(kind, known));
    const manifest = readManifest(dir);
    if (manifest.hash === known) {
      cached(dir);
      return imageFromManifest(dir, manifest);
    }
  }
  const outlet: ProgressOutlet = { lock: null };
  const stages = new BuildStages<ImageStage>(STAGE_WEIGHTS[hasRootfs(kind) ? 'withRootfs' : 'initramfsOnly'], (report) => {
    options.onProgress?.(report);
    outlet.lock?.progress(report);
  });
  stages.report('inputs', 0, 'hashing the recipe, kernel, busybox and agent');
  const inputs = await gatherInputs(kind, options);
  stages.done('inputs');
  const dir = join(root, imageDirName(kind, inputs.hash));
  const ready = builtImage(dir, inputs.hash);
  if (ready) {
    rememberHash(root, kind, print, inputs.hash);
    cached(dir);
    return ready;
  }
  let pending = buildsInFlight.get(dir);
  if (!pending) {
    pending = buildOnce(kind, inputs, root, stages, outlet, options).finally(() => buildsInFlight.delete(dir));
    buildsInFlight.set(dir, pending);
  }
  const image = await pending;
  rememberHash(root, kind, print, inputs.hash);
  // A process that waited for another's build ran none of the stages: its list would show them pending.
  const build = stages.snapshot();
  options.onProgress?.({
    stage: 'done',
    message: `built ${basename(image.dir)}`,
    fraction: 1,
    stageFraction: 1,
    build: build.some((s) => s.state === 'pending') ? [] : build,
  });
  return image;
}

/**
 * The hash of the image `ensureImage` would give for `kind` when it is already built and its
 * inputs are unchanged, else null: read from the cache alone, never building (nor hashing the
 * inputs in full, which a first start after a change does).
 */
export function cachedImageHash(kind: ImageKind, options: Pick<EnsureImageOptions, 'agentBinary' | 'recipeDir' | 'kernel'>): string | null {
  const root = imageCacheDir();
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
  const needed = [
    KERNEL_FILE,
    INITRD_FILE,
    ...(hasRootfs(manifest.kind) ? [ROOTFS_FILE] : []),
    ...(hasRootfs(manifest.kind) && guestImageKind(manifest.kind).codingAgents ? [AGENTS_FILE] : []),
  ];
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
 * The disks of an image with a root file system: the rootfs, the coding agents' layer when it has
 * one, and the session disk. Init looks them up by serial, not by /dev/vdX, so neither the
 * launcher's disk order nor the kernel's probe order can swap them. The layers are shared
 * read-only by all sessions; the session disk comes from createSessionDisk.
 */
export function imageDisks(image: GuestImage, sessionDisk: string): ImageDisk[] {
  if (!image.rootfs) throw new Error(`the ${image.kind} image boots from its initramfs and takes no disks`);
  return [
    { path: image.rootfs, readOnly: true, serial: ROOT_DISK_SERIAL },
    ...(image.agents ? [{ path: image.agents, readOnly: true, serial: AGENTS_DISK_SERIAL }] : []),
    { path: sessionDisk, readOnly: false, serial: SESSION_DISK_SERIAL },
  ];
}

/** Size on disk of an image's files, for reports. */
export function imageSizes(image: GuestImage): Record<string, number> {
  const sizes: Record<string, number> = {};
  for (const path of [image.kernel, image.initrd, image.rootfs, image.agents]) if (path) sizes[basename(path)] = statSync(path).size;
  return sizes;
}
