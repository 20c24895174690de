import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findHostKernel } from '../../electron/vm/guestImage.ts';
import { findQemu } from '../../electron/vm/qemuBackend.ts';
import { tempHome } from './tempHome.ts';

// A throwaway CAPSEM_HOME whose guest images are shared across runs: images are cached by recipe
// hash, so a changed recipe still builds afresh, and an unchanged one (the agent image takes about
// two minutes) is built once per checkout.

export const IMAGE_CACHE = fileURLToPath(new URL('../../.cache/images/', import.meta.url));

export function vmTestHome(): ReturnType<typeof tempHome> {
  const home = tempHome();
  mkdirSync(IMAGE_CACHE, { recursive: true, mode: 0o700 });
  symlinkSync(IMAGE_CACHE, join(home.root, 'images'));
  return home;
}

/** Why real VMs cannot run here, or null when they can. */
export function vmUnavailable(): string | null {
  if (!findQemu()) return 'qemu-system-x86_64 is not installed';
  try {
    findHostKernel();
  } catch (err) {
    return (err as Error).message;
  }
  return null;
}

/** Why the agent image cannot be built here, or null. */
export function agentImageUnavailable(): string | null {
  if (process.getuid?.() !== 0) return 'building the agent image needs root (mmdebstrap)';
  return vmUnavailable();
}
