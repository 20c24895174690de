import { describe, expect, it } from 'vitest';
import { chooseAccelerator, tscKhz } from '../../../electron/vm/accel.ts';
import { qemuArgs, socketsIn } from '../../../electron/vm/qemuBackend.ts';

const cpuinfo = (flags: string) => `processor\t: 0\ncpu MHz\t\t: 2793.438\nflags\t\t: fpu sse2 ${flags} avx\n`;

describe('accelerator choice', () => {
  it('uses KVM only with hardware virtualisation, an accessible /dev/kvm and no software hypervisor', () => {
    expect(chooseAccelerator({ cpuinfo: cpuinfo('vmx'), kvmDevice: 'ok', pvmModule: false }).accel).toBe('kvm');
    expect(chooseAccelerator({ cpuinfo: cpuinfo('svm'), kvmDevice: 'ok', pvmModule: false }).accel).toBe('kvm');
  });

  it.each([
    ['no /dev/kvm', { cpuinfo: cpuinfo('vmx'), kvmDevice: 'absent', pvmModule: false }, /no \/dev\/kvm/],
    ['a PVM /dev/kvm (this machine)', { cpuinfo: cpuinfo(''), kvmDevice: 'ok', pvmModule: true }, /kvm_pvm/],
    ['no vmx/svm flag', { cpuinfo: cpuinfo(''), kvmDevice: 'ok', pvmModule: false }, /no vmx\/svm/],
    ['a /dev/kvm this user cannot open', { cpuinfo: cpuinfo('vmx'), kvmDevice: 'no-access', pvmModule: false }, /kvm group/],
  ] as const)('falls back to TCG with %s, and says why and that it is slow', (_what, input, reason) => {
    const choice = chooseAccelerator(input);
    expect(choice.accel).toBe('tcg');
    expect(choice.reason).toMatch(reason);
    expect(choice.reason).toMatch(/slower/);
  });

  it('reads the TSC frequency for tsc_early_khz from cpuinfo', () => {
    expect(tscKhz(cpuinfo(''))).toBe(2793438);
    expect(tscKhz('nothing here')).toBeNull();
  });
});

describe('QEMU command line', () => {
  const spec = {
    kernel: '/k',
    initrd: '/i',
    cmdline: 'capsem.image=agent',
    disks: [
      { path: '/ro.sqfs', readOnly: true, serial: 'capsem-root' },
      { path: '/rw.ext4', readOnly: false },
    ],
    memoryMiB: 512,
    cpus: 1,
    runDir: '/r',
    serialLog: '/s/serial.log',
  };
  const tcg = { accel: 'tcg', reason: '' } as const;

  it('boots microvm under TCG with the settings that keep it from hanging, the agent port and the disks in order', () => {
    const args = qemuArgs(spec, tcg, socketsIn('/r', false), 2793438).join(' ');
    expect(args).toContain('-M microvm,x-option-roms=off,pit=on,pic=on,rtc=on -accel tcg -cpu max,-erms,-fsrm');
    expect(args).toContain('-append console=ttyS0 quiet panic=-1 tsc_early_khz=2793438 capsem.image=agent');
    expect(args).toContain('-chardev socket,id=agent,path=/r/agent.sock,server=on,wait=off');
    expect(args).toContain('virtserialport,bus=vser0.0,chardev=agent,name=capsem.mux');
    expect(args).toContain('-serial file:/s/serial.log');
    expect(args).toContain('-name capsem,debug-threads=on');
    expect(args.indexOf('file=/ro.sqfs,format=raw,if=none,readonly=on')).toBeLessThan(
      args.indexOf('file=/rw.ext4,format=raw,if=none -device'),
    );
    expect(args).toContain('virtio-blk-device,drive=disk0,serial=capsem-root');
    expect(args).toMatch(/virtio-blk-device,drive=disk1( |$)/);
    expect(args).not.toContain('vhost-user-fs');
  });

  it('shares the workspace over virtiofs with shared guest memory, and uses the host CPU under KVM', () => {
    const args = qemuArgs(spec, { accel: 'kvm', reason: '' }, socketsIn('/r', true), null).join(' ');
    expect(args).toContain('microvm,x-option-roms=off,pit=on,pic=on,rtc=on,memory-backend=mem -accel kvm -cpu host');
    expect(args).toContain('-object memory-backend-memfd,id=mem,size=512M,share=on');
    expect(args).toContain('-device vhost-user-fs-device,chardev=workspace,tag=workspace');
    expect(args).toContain('-global virtio-mmio.force-legacy=false');
    expect(args).not.toContain('tsc_early_khz');
  });

  it('gives every VM a balloon that only reports free pages, with or without a shared workspace', () => {
    for (const withWorkspace of [false, true])
      expect(qemuArgs(spec, tcg, socketsIn('/r', withWorkspace), null).join(' ')).toContain(
        '-device virtio-balloon-device,free-page-reporting=on',
      );
  });
});
