import type { KeyStore } from '../credentials/keyStore.ts';
import type { CapsemHome } from '../store/paths.ts';
import type { VmBackend } from '../vm/backend.ts';
import { findQemu, QemuBackend } from '../vm/qemuBackend.ts';
import { VmHost, type PlanFor } from '../vm/vmHost.ts';
import type { Ownership } from './ownership.ts';
import { vmHostMethods } from './vmHostMethods.ts';

// The one way an owner hosts VMs, whether it is a CLI or the app: a VmHost whose vm.* methods are
// served on the owner's control socket, so a `capsem run` reaches the same methods in either.

/** What the owner's VMs boot on and with; QEMU and each kind's cached image unless said. */
export interface VmChoice {
  readonly backend?: () => VmBackend;
  readonly plan?: PlanFor;
  /** The owner's stored keys, which its sessions' brokers read. */
  readonly keyStore?: KeyStore;
  /** Keep a VM booted ahead (the app's choice; a CLI owner never does). */
  readonly spareVm?: () => boolean;
  readonly onSpareProblem?: (message: string) => void;
}

export function qemuOrExplain(): QemuBackend {
  const paths = findQemu();
  if (!paths) throw new Error('qemu-system-x86_64 is not installed (apt-get install -y qemu-system-x86); run capsem doctor');
  return new QemuBackend(paths);
}

export function hostVms(owned: Ownership, home: CapsemHome, vm: VmChoice = {}): VmHost {
  const host = new VmHost({
    home,
    backend: vm.backend ?? qemuOrExplain,
    plan: vm.plan,
    keyStore: vm.keyStore,
    ...(vm.spareVm ? { spareVm: vm.spareVm } : {}),
    ...(vm.onSpareProblem ? { onSpareProblem: vm.onSpareProblem } : {}),
  });
  for (const [name, handler] of Object.entries(vmHostMethods(host))) owned.server.register(name, handler);
  return host;
}
