import { accessSync, constants, existsSync, readFileSync } from 'node:fs';

// Which accelerator QEMU gets. KVM only where it really is hardware virtualisation: a /dev/kvm
// backed by a software hypervisor (kvm_pvm, as on some cloud VMs) crashes a stock kernel, so the
// device existing is not enough. Probed, never assumed; TCG otherwise, said plainly because it is
// an order of magnitude slower.

export type Accelerator = 'kvm' | 'tcg';

export interface AcceleratorChoice {
  readonly accel: Accelerator;
  /** Why this one, in words a person can act on. */
  readonly reason: string;
}

export interface AcceleratorProbeInput {
  readonly cpuinfo: string;
  readonly kvmDevice: 'absent' | 'no-access' | 'ok';
  readonly pvmModule: boolean;
}

export function chooseAccelerator(input: AcceleratorProbeInput): AcceleratorChoice {
  const flags = /^flags\s*:(.*)$/m.exec(input.cpuinfo)?.[1]?.split(/\s+/) ?? [];
  const hardware = flags.includes('vmx') || flags.includes('svm');
  if (input.kvmDevice === 'absent') return { accel: 'tcg', reason: 'no /dev/kvm: using TCG (software emulation, about 10x slower)' };
  if (input.pvmModule)
    return {
      accel: 'tcg',
      reason: '/dev/kvm is a software hypervisor (kvm_pvm), which cannot run a stock kernel: using TCG (about 10x slower)',
    };
  if (!hardware)
    return {
      accel: 'tcg',
      reason: 'the CPU shows no vmx/svm flag, so /dev/kvm cannot be hardware virtualisation: using TCG (about 10x slower)',
    };
  if (input.kvmDevice === 'no-access')
    return {
      accel: 'tcg',
      reason: '/dev/kvm is not readable and writable by this user (add yourself to the kvm group): using TCG (about 10x slower)',
    };
  return { accel: 'kvm', reason: 'KVM (hardware virtualisation)' };
}

export function probeAccelerator(): AcceleratorChoice {
  let kvmDevice: AcceleratorProbeInput['kvmDevice'] = 'absent';
  if (existsSync('/dev/kvm')) {
    try {
      accessSync('/dev/kvm', constants.R_OK | constants.W_OK);
      kvmDevice = 'ok';
    } catch {
      kvmDevice = 'no-access';
    }
  }
  const cpuinfo = existsSync('/proc/cpuinfo') ? readFileSync('/proc/cpuinfo', 'utf8') : '';
  return chooseAccelerator({ cpuinfo, kvmDevice, pvmModule: existsSync('/sys/module/kvm_pvm') });
}

/**
 * The host TSC frequency for the guest's `tsc_early_khz=`: under TCG the kernel's PIT calibration
 * fails now and then under load and the boot hangs; told the frequency, it skips calibration.
 */
export function tscKhz(cpuinfo: string = existsSync('/proc/cpuinfo') ? readFileSync('/proc/cpuinfo', 'utf8') : ''): number | null {
  const mhz = Number(/^cpu MHz\s*:\s*([\d.]+)/m.exec(cpuinfo)?.[1]);
  return Number.isFinite(mhz) && mhz > 0 ? Math.round(mhz * 1000) : null;
}
