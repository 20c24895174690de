import { accessSync, constants, existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { runCommand } from './imageCommand.ts';

/** A kernel installed on this machine whose modules the guest initramfs can carry. */
export interface HostKernel {
  readonly path: string;
  readonly version: string;
  readonly modulesDir: string;
}

export interface KernelModule {
  readonly name: string;
  readonly path: string;
}

function compareVersions(a: string, b: string): number {
  return a.localeCompare(b, 'en', { numeric: true });
}

/**
 * The guest boots the host's own Debian kernel, so its version is whatever is installed: pick a
 * /boot/vmlinuz-* whose modules are present, preferring the cloud flavour (virtio-centred, smaller)
 * and then the newest version.
 */
export function findHostKernel(options: { bootDir?: string; modulesRoot?: string } = {}): HostKernel {
  const bootDir = options.bootDir ?? '/boot';
  const modulesRoot = options.modulesRoot ?? '/lib/modules';
  const names = existsSync(bootDir) ? readdirSync(bootDir) : [];
  const candidates = names
    .filter((name) => name.startsWith('vmlinuz-'))
    .map((name) => ({ path: join(bootDir, name), version: name.slice('vmlinuz-'.length) }))
    .filter((k) => k.version.length > 0 && existsSync(join(modulesRoot, k.version, 'modules.dep')))
    .sort((a, b) => {
      const cloud = Number(b.version.includes('cloud')) - Number(a.version.includes('cloud'));
      return cloud !== 0 ? cloud : compareVersions(b.version, a.version);
    });
  const chosen = candidates[0];
  if (!chosen) {
    throw new Error(
      `no kernel in ${bootDir} with its modules in ${modulesRoot}: install one (on Debian: apt-get install linux-image-cloud-amd64)`,
    );
  }
  try {
    accessSync(chosen.path, constants.R_OK);
  } catch {
    throw new Error(
      `the kernel ${chosen.path} is not readable by this user; make it readable (chmod 0644 ${chosen.path}) or build as root`,
    );
  }
  return { ...chosen, modulesDir: join(modulesRoot, chosen.version) };
}

async function modinfoField(kernel: HostKernel, field: string, name: string): Promise<string> {
  try {
    return (await runCommand('modinfo', ['-k', kernel.version, '-F', field, name])).trim();
  } catch (err) {
    throw new Error(`kernel ${kernel.version} has no module ${name}: ${(err as Error).message.split('\n').pop() ?? ''}`);
  }
}

/**
 * Resolves module names to .ko files in load order (dependencies before dependents), dropping
 * modules the kernel has built in. Soft dependencies are not followed; list them by name instead.
 */
export async function resolveModules(kernel: HostKernel, names: readonly string[]): Promise<KernelModule[]> {
  const ordered: KernelModule[] = [];
  const done = new Set<string>();
  const visiting = new Set<string>();
  const visit = async (given: string): Promise<void> => {
    // modinfo and `depends:` spell module names with underscores; files may use dashes.
    const name = given.replace(/-/g, '_');
    if (done.has(name)) return;
    if (visiting.has(name)) throw new Error(`kernel module dependency cycle through ${name}`);
    visiting.add(name);
    const path = await modinfoField(kernel, 'filename', name);
    if (path !== '(builtin)' && path.length > 0) {
      const depends = (await modinfoField(kernel, 'depends', name))
        .split(',')
        .map((d) => d.trim())
        .filter((d) => d.length > 0);
      for (const dep of depends) await visit(dep);
      ordered.push({ name, path });
    }
    visiting.delete(name);
    done.add(name);
  };
  for (const name of names) await visit(name);
  return ordered;
}
