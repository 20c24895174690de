import type { Socket } from 'node:net';
import type { AcceleratorChoice } from './accel.ts';

// What the supervisor needs from a hypervisor: launch a VM from a kernel, initrd and disks, give
// back the agent's port as a byte stream, stop it, and say when and why it ended. QEMU implements
// it on Linux; a Virtualization.framework helper can implement it on macOS.

export interface DiskSpec {
  readonly path: string;
  readonly readOnly: boolean;
  /** A serial the guest finds the disk by (device names follow probe order, not this list's). */
  readonly serial?: string;
}

export interface LaunchSpec {
  readonly kernel: string;
  readonly initrd: string;
  /** Kernel command line beyond what the backend adds for its console and clock. */
  readonly cmdline: string;
  /** Attached in order: the guest sees them as /dev/vda, /dev/vdb, ... */
  readonly disks: readonly DiskSpec[];
  /** A host folder shared with the guest (virtiofs tag `workspace`). */
  readonly workspace?: string;
  /** Instead of `workspace`: a share that starts empty, for a VM booted before its session; see VmInstance.bindIntoShare. */
  readonly emptyShare?: boolean;
  readonly memoryMiB: number;
  readonly cpus: number;
  /** A private folder for the VM's sockets and pid records; short, since unix socket paths are. */
  readonly runDir: string;
  /** Where the guest's serial console is written. */
  readonly serialLog: string;
}

export interface VmExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** The last lines QEMU (or a helper) wrote to stderr: the reason a launch or a run failed. */
  readonly stderr: string;
}

export interface VmInstance {
  readonly accelerator: AcceleratorChoice;
  /** Process ids of the VM and its helpers, for leftovers cleanup. */
  readonly pids: readonly number[];
  /** Connects to the agent's multiplexed port. */
  connectAgentPort(timeoutMs: number): Promise<Socket>;
  /** Resolves when the VM process has ended, for whatever reason. */
  readonly exited: Promise<VmExit>;
  /**
   * With an empty share: binds the host folder `source` into it under a new random name, seen by
   * the share's server alone (never by the host at large), and resolves with that name.
   */
  bindIntoShare?(source: string): Promise<string>;
  /** Ends the VM at once (its helpers too) and resolves when it has gone. */
  kill(): Promise<VmExit>;
}

export interface VmBackend {
  readonly name: string;
  launch(spec: LaunchSpec): Promise<VmInstance>;
}
