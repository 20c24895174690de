import { existsSync, mkdirSync, mkdtempSync, openSync, closeSync, ftruncateSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { runCommand } from './imageCommand.ts';

export const DEFAULT_SESSION_DISK_BYTES = 2 * 1024 ** 3;

/** Where the guest init looks for the app's CA on the session disk (see build/guest/init-agent.sh). */
export const SESSION_DISK_CA_PATH = '/capsem/ca.pem';

export interface SessionDiskOptions {
  readonly sizeBytes?: number;
  /** The app's CA in PEM; the guest trusts it system-wide. Per install, so never part of the cached image. */
  readonly caCertPem?: string;
}

function seedDir(caCertPem: string | undefined): string {
  const dir = mkdtempSync(join(tmpdir(), 'capsem-disk-seed-'));
  if (caCertPem !== undefined) {
    mkdirSync(join(dir, 'capsem'), { mode: 0o755 });
    writeFileSync(join(dir, 'capsem', 'ca.pem'), caCertPem.endsWith('\n') ? caCertPem : `${caCertPem}\n`, { mode: 0o644 });
  }
  return dir;
}

/**
 * The agent image's per-session writable disk: a sparse ext4 file whose upper/ and work/ (made by
 * init at first boot, as root in the guest) hold the session's changes to the root filesystem,
 * seeded with the CA. Its root folder is owned by root even when the host user is not, since the
 * guest's root user manages it. Written under a temporary name and renamed, so a crash never
 * leaves a half-made disk at `path`. Whether to keep it after the session is the caller's choice.
 */
export async function createSessionDisk(path: string, options: SessionDiskOptions = {}): Promise<void> {
  if (existsSync(path)) throw new Error(`session disk ${path} already exists; keep it or delete it first`);
  const size = options.sizeBytes ?? DEFAULT_SESSION_DISK_BYTES;
  if (!Number.isSafeInteger(size) || size < 64 * 1024 ** 2) throw new Error(`session disk size ${size} is too small (at least 64 MiB)`);
  mkdirSync(dirname(path), { recursive: true });
  const partial = `${path}.partial-${process.pid}`;
  const seed = seedDir(options.caCertPem);
  try {
    const fd = openSync(partial, 'w', 0o600);
    try {
      ftruncateSync(fd, size);
    } finally {
      closeSync(fd);
    }
    // -m 0: no blocks reserved for root on a single-user disk. lazy init keeps the file sparse.
    await runCommand('mkfs.ext4', [
      '-q',
      '-F',
      '-L',
      'capsem-session',
      '-m',
      '0',
      '-E',
      'root_owner=0:0,lazy_itable_init=1,lazy_journal_init=1',
      '-d',
      seed,
      partial,
    ]);
    renameSync(partial, path);
  } catch (err) {
    rmSync(partial, { force: true });
    throw err;
  } finally {
    rmSync(seed, { recursive: true, force: true });
  }
}

/**
 * Replaces the CA on a kept session disk (the app's CA can change between runs of a named
 * session), without mounting it. The disk must not be in use by a running VM.
 */
export async function writeSessionDiskCa(path: string, caCertPem: string): Promise<void> {
  if (!existsSync(path)) throw new Error(`session disk ${path} does not exist`);
  const seed = seedDir(caCertPem);
  const cmds = join(seed, 'debugfs.cmds');
  try {
    writeFileSync(
      cmds,
      [
        `mkdir /capsem`,
        `rm ${SESSION_DISK_CA_PATH}`,
        `write ${join(seed, 'capsem', 'ca.pem')} ${SESSION_DISK_CA_PATH}`,
        `sif ${SESSION_DISK_CA_PATH} mode 0100644`,
        `sif ${SESSION_DISK_CA_PATH} uid 0`,
        `sif ${SESSION_DISK_CA_PATH} gid 0`,
        '',
      ].join('\n'),
    );
    await runCommand('debugfs', ['-w', '-f', cmds, path]);
    // debugfs reports failed requests on stderr but exits 0; read the file back to be sure.
    const written = await runCommand('debugfs', ['-R', `cat ${SESSION_DISK_CA_PATH}`, path]);
    if (written.trim() !== caCertPem.trim()) throw new Error(`could not write the CA into session disk ${path}`);
  } finally {
    rmSync(seed, { recursive: true, force: true });
  }
}

/**
 * For a session that may be resumed: creates the disk on first boot, and on later boots keeps its
 * contents and only brings the CA up to date.
 */
export async function ensureSessionDisk(path: string, options: SessionDiskOptions = {}): Promise<'created' | 'kept'> {
  if (!existsSync(path)) {
    await createSessionDisk(path, options);
    return 'created';
  }
  if (options.caCertPem !== undefined) await writeSessionDiskCa(path, options.caCertPem);
  return 'kept';
}
