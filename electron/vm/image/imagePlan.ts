import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CapsemHome, SessionPaths } from '../../store/paths.ts';
import { agentBinary } from '../agentBinary.ts';
import { ensureImage, ensureSessionDisk, imageDisks, verifyImage, type ImageKind, type ImageProgress } from './guestImage.ts';
import { hasRootfs } from './imageRecipe.ts';
import type { BootPlan } from '../vmSession.ts';

// What a session boots: the cached image of its kind (built on first use, verified by SHA-256
// before every boot) and, for an image with a root file system, the session's own writable disk
// (the overlay's upper layer), kept in the session folder so a named session can be resumed on it.

export const SESSION_DISK_FILE = 'disk.ext4';
/** Where the guest sees the session's workspace. */
export const GUEST_WORKSPACE = '/workspace';

/** Whether a session of this kind has a disk of its own: its image has a read-only root to lay it over. */
export function hasSessionDisk(kind: ImageKind): boolean {
  return hasRootfs(kind);
}

export function imageBootPlan(home: CapsemHome, kind: ImageKind, onProgress?: (p: ImageProgress) => void) {
  return async (paths: Pick<SessionPaths, 'dir'>, caPemPath: string): Promise<BootPlan> => {
    const built = await ensureImage(home, kind, { agentBinary: agentBinary(), onProgress });
    const image = await verifyImage(built);
    const common = { kernel: image.kernel, initrd: image.initrd, guestEnv: {}, guestWorkspace: GUEST_WORKSPACE, imageHash: image.hash };
    if (!hasSessionDisk(kind)) return { ...common, cmdline: '', disks: [] };
    const disk = join(paths.dir, SESSION_DISK_FILE);
    await ensureSessionDisk(disk, { caCertPem: readFileSync(caPemPath, 'utf8') });
    return { ...common, cmdline: '', disks: imageDisks(image, disk), sessionDisk: disk };
  };
}
