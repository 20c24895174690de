import { join } from 'node:path';
import type { CapsemHome } from '../store/paths.ts';

/** Where the owner of a CAPSEM_HOME announces itself: both live in the 0700 run dir. */
export function ownerPaths(home: CapsemHome): { readonly lock: string; readonly socket: string } {
  return { lock: join(home.runDir, 'owner.lock'), socket: join(home.runDir, 'control.sock') };
}
