import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// A real disk that fills up: a tmpfs of a few MiB, mounted on a fresh folder. SQLite sees ENOSPC
// from the kernel there exactly as on a full laptop disk; no pragma or mock stands in for it.

export interface SmallDisk {
  readonly dir: string;
  /** Grows (or shrinks) the disk in place, as freeing space would. */
  resize(sizeMiB: number): void;
  unmount(): void;
}

function run(argv: readonly string[]): string | null {
  const done = spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8' });
  if (done.status === 0) return null;
  return `${argv.join(' ')} failed: ${(done.stderr ?? '').trim() || done.error?.message || `exit ${done.status}`}`;
}

function mount(sizeMiB: number): SmallDisk | string {
  const dir = mkdtempSync(join(tmpdir(), 'capsem-small-disk-'));
  const failed = run(['mount', '-t', 'tmpfs', '-o', `size=${sizeMiB}M,mode=0700`, 'tmpfs', dir]);
  if (failed) {
    rmdirSync(dir);
    return failed;
  }
  return {
    dir,
    resize: (size) => {
      const refused = run(['mount', '-o', `remount,size=${size}M`, dir]);
      if (refused) throw new Error(refused);
    },
    unmount: () => {
      // A process the test failed to stop may still hold a file open: detach the mount anyway.
      if (run(['umount', dir])) run(['umount', '-l', dir]);
      rmdirSync(dir);
    },
  };
}

/** Why a small disk cannot be mounted here (not root, no tmpfs), or null when it can. */
export function smallDiskUnavailable(): string | null {
  if (process.getuid?.() !== 0) return 'mounting a tmpfs needs root';
  const probe = mount(1);
  if (typeof probe === 'string') return probe;
  probe.unmount();
  return null;
}

/** Mounts a small disk; throws when it cannot (check smallDiskUnavailable first). */
export function mountSmallDisk(sizeMiB: number): SmallDisk {
  const disk = mount(sizeMiB);
  if (typeof disk === 'string') throw new Error(disk);
  return disk;
}
