import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CapsemHome, SessionPaths } from '../../store/paths.ts';
import { agentBinary } from '../agentBinary.ts';
import { ensureImage, ensureSessionDisk, imageDisks, verifyImage, type ImageKind, type ImageProgress } from './guestImage.ts';
import type { BootPlan } from '../vmSession.ts';

// What a session boots: the cached image of its kind (built on first use, verified by SHA-256
// before every boot) and, for the agent image, the session's own writable disk, kept in the
// session folder so a named session can be resumed on it.

export const SESSION_DISK_FILE = 'disk.ext4';
/** Where the guest sees the session's workspace. */
export const GUEST_WORKSPACE = '/workspace';

export function imageBootPlan(home: CapsemHome, kind: ImageKind, onProgress?: (p: ImageProgress) => void) {
  return async (paths: SessionPaths, caPemPath: string): Promise<BootPlan> => {
    const built = await ensureImage(home, kind, { agentBinary: agentBinary(), onProgress });
    const image = await verifyImage(built);
    const common = { kernel: image.kernel, initrd: image.initrd, guestEnv: {}, guestWorkspace: GUEST_WORKSPACE };
    if (kind === 'minimal') return { ...common, cmdline: '', disks: [] };
    const disk = join(paths.dir, SESSION_DISK_FILE);
    await ensureSessionDisk(disk, { caCertPem: readFileSync(caPemPath, 'utf8') });
    return { ...common, cmdline: '', disks: imageDisks(image, disk), sessionDisk: disk };
  };
}
