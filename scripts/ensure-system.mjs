// Debian packages the VMs (and their tests) need: QEMU and virtiofsd, the guest kernel, the tools
// that build the guest images, gcc for the guest agent, clang for its fuzzer, Chromium for the
// renderer's tests (Electron's own runtime cannot be fetched where its download host is
// unreachable), uidmap's newuidmap (an ordinary user's virtiofsd runs in a user namespace, so
// the files a guest makes are that user's), and Python's requests for the tests that record a
// Python client. Installed with apt when this runs as root on Debian; otherwise the missing ones
// are named with the command to run, and VM features (and their tests) say what is missing.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

export const SYSTEM_PACKAGES = [
  'build-essential',
  'python3',
  'python3-requests',
  'qemu-system-x86',
  'linux-image-cloud-amd64',
  'busybox-static',
  'mmdebstrap',
  'squashfs-tools',
  'e2fsprogs',
  'cpio',
  'kmod',
  'util-linux',
  'uidmap',
  'curl',
  'clang',
  'libclang-rt-14-dev',
  'ca-certificates',
  'chromium',
];

function missingPackages(packages) {
  const query = spawnSync('dpkg-query', ['-W', '-f=${Package} ${db:Status-Status}\n', ...packages], { encoding: 'utf8' });
  const installed = new Set(
    query.stdout
      .split('\n')
      .filter((l) => l.endsWith(' installed'))
      .map((l) => l.split(' ')[0]),
  );
  return packages.filter((p) => !installed.has(p));
}

export function ensureSystemPackages(packages = SYSTEM_PACKAGES) {
  if (!existsSync('/usr/bin/dpkg-query') || !existsSync('/usr/bin/apt-get')) {
    console.error('capsem: not a Debian system; install QEMU, a Linux kernel image, busybox (static) and gcc yourself (see README)');
    return false;
  }
  const missing = missingPackages(packages);
  if (missing.length === 0) return true;
  if (process.getuid?.() !== 0) {
    console.error(
      `capsem: missing Debian packages: ${missing.join(' ')}\n  run: sudo apt-get install -y --no-install-recommends ${missing.join(' ')}`,
    );
    return false;
  }
  console.error(`capsem: installing Debian packages: ${missing.join(' ')} (about a minute)...`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  let install = spawnSync('apt-get', ['install', '-y', '-q', '--no-install-recommends', ...missing], { stdio: 'inherit', env });
  if (install.status !== 0) {
    spawnSync('apt-get', ['update', '-q'], { stdio: 'inherit', env });
    install = spawnSync('apt-get', ['install', '-y', '-q', '--no-install-recommends', ...missing], { stdio: 'inherit', env });
  }
  if (install.status !== 0) console.error('capsem: apt-get install failed; VM features will say what is missing');
  return install.status === 0;
}

if (import.meta.url === `file://${process.argv[1]}`) process.exitCode = ensureSystemPackages() ? 0 : 1;
