import { describe, expect, it } from 'vitest';
import { ownershipFinding } from '../../../electron/cli/doctorCommand.ts';
import {
  emptyShareCommand,
  pidFolderMount,
  planOwnership,
  subordinateRange,
  virtiofsdCommand,
  type OwnershipFacts,
} from '../../../electron/vm/fileOwnership.ts';

// How virtiofsd is started so that what the guest writes is the host user's, and what capsem
// doctor says when this machine cannot do it. The real thing, as an ordinary user with a real VM,
// is in test/integration/vmWorkspaceOwner.test.ts.

const user: OwnershipFacts = {
  uid: 1002,
  user: 'ada',
  unshare: '/usr/bin/unshare',
  newuidmap: '/usr/bin/newuidmap',
  newgidmap: '/usr/bin/newgidmap',
  subuid: 'other:100000:65536\nada:165536:65536\n',
  subgid: 'ada:165536:65536\n',
  maxUserNamespaces: 96364,
  unprivilegedUsernsClone: null,
};

describe('who virtiofsd runs as', () => {
  it('keeps root as it is: virtiofsd itself, chroot sandbox', () => {
    const plan = planOwnership({ ...user, uid: 0 });
    expect(plan).toEqual({ kind: 'root' });
    expect(virtiofsdCommand(plan, '/usr/lib/qemu/virtiofsd', '/r/v.sock', '/w', () => '/run')).toEqual({
      file: '/usr/lib/qemu/virtiofsd',
      args: ['--socket-path=/r/v.sock', '-o', 'source=/w', '-o', 'cache=auto', '-o', 'sandbox=chroot'],
    });
  });

  it("runs an ordinary user's virtiofsd in a user namespace where the guest's root is that user, with a private /run for its pid file", () => {
    const plan = planOwnership(user);
    expect(plan).toEqual({ kind: 'user-namespace', unshare: '/usr/bin/unshare', user: 'ada', subuid: '165536:65536' });
    const { file, args } = virtiofsdCommand(plan, '/usr/lib/qemu/virtiofsd', '/r/v.sock', '/w', () => '/run');
    expect(file).toBe('/usr/bin/unshare');
    expect(args.slice(0, 4)).toEqual(['--map-root-user', '--map-auto', '--mount', '--']);
    expect(args.slice(args.indexOf('capsem-virtiofsd') + 1)).toEqual([
      '/run',
      '/usr/lib/qemu/virtiofsd',
      '--socket-path=/r/v.sock',
      '-o',
      'source=/w',
      '-o',
      'cache=auto',
      '-o',
      'sandbox=namespace',
    ]);
  });

  it('finds the subordinate range by name or by uid, and ignores broken lines', () => {
    expect(subordinateRange('ada:x:1\n1002:200000:65536\n', 'ada', 1002)).toBe('200000:65536');
    expect(subordinateRange('ada:300000:0\n', 'ada', 1002)).toBeNull();
    expect(subordinateRange(null, 'ada', 1002)).toBeNull();
  });

  it.each([
    ['no newuidmap', { newuidmap: null }, /newuidmap and newgidmap/, 'apt-get install -y --no-install-recommends uidmap'],
    [
      'no subordinate ids',
      { subuid: 'other:100000:65536\n', subgid: '' },
      /\/etc\/subuid and \/etc\/subgid must give ada/,
      'usermod --add-subuids 165536-231071 --add-subgids 165536-231071 ada',
    ],
    ['no subordinate group ids', { subgid: '' }, /\/etc\/subgid must give ada/, 'usermod --add-subuids 231072-296607'],
    [
      'user namespaces switched off',
      { unprivilegedUsernsClone: 0 },
      /user namespaces must be enabled/,
      'sysctl -w kernel.unprivileged_userns_clone=1',
    ],
    ['no unshare', { unshare: null }, /needs unshare/, 'util-linux'],
  ] as const)('says what is missing, and the fix, with %s', (_what, change, problem, fix) => {
    const plan = planOwnership({ ...user, ...change });
    expect(plan.kind).toBe('unavailable');
    const finding = ownershipFinding({ ...user, ...change });
    expect(finding).toMatchObject({ check: 'file ownership', level: 'fail', detail: expect.stringMatching(problem) });
    expect(finding.fix).toContain(fix);
    expect(() => virtiofsdCommand(plan, '/v', '/s', '/w', () => '/run')).toThrow(/run capsem doctor/);
  });

  it('says in capsem doctor whose the files will be', () => {
    expect(ownershipFinding(user)).toMatchObject({
      level: 'ok',
      detail: expect.stringMatching(/user namespace \(subordinate ids 165536:65536\).*are ada's/),
    });
    expect(ownershipFinding({ ...user, uid: 0 })).toMatchObject({ level: 'ok', detail: expect.stringMatching(/as root/) });
  });
});

describe("where the namespace's private tmpfs goes", () => {
  it('takes /run, unless the workspace or the sockets are there; then /var; and says so when both are taken', () => {
    expect(pidFolderMount(['/home/ada/p', '/home/ada/.capsem/run/vms/x'], '/run')).toBe('/run');
    expect(pidFolderMount(['/home/ada/p', '/run/user/1002/capsem/run/vms/x'], '/run')).toBe('/var');
    expect(() => pidFolderMount(['/var/tmp/p', '/run/user/1002/x'], '/run')).toThrow(/put CAPSEM_HOME and the project folder elsewhere/);
  });
});

describe('emptyShareCommand', () => {
  const share = { dir: '/r/share', fifo: '/r/binder.fifo', results: '/r/bound' };
  const paths = { virtiofsd: '/usr/lib/qemu/virtiofsd', unshare: '/usr/bin/unshare', setpriv: '/usr/bin/setpriv' };

  it('as root: a private mount namespace holding virtiofsd (chroot sandbox) and its binder', () => {
    const { file, args } = emptyShareCommand({ kind: 'root' }, paths, '/r/v.sock', share, () => '/run');
    expect(file).toBe('/usr/bin/unshare');
    expect(args.slice(0, 4)).toEqual(['--mount', '--propagation', 'private', '--']);
    expect(args.slice(-8)).toEqual([
      '/usr/lib/qemu/virtiofsd',
      '--socket-path=/r/v.sock',
      '-o',
      'source=/r/share',
      '-o',
      'cache=auto',
      '-o',
      'sandbox=chroot',
    ]);
    expect(args).toContain('/r/binder.fifo');
  });

  it("as a user: the share is a shared mount, so binds reach virtiofsd's own namespace", () => {
    const plan = { kind: 'user-namespace', unshare: '/usr/bin/unshare', user: 'u', subuid: '100000:65536' } as const;
    const { args } = emptyShareCommand(plan, paths, '/r/v.sock', share, () => '/run');
    expect(args.slice(0, 3)).toEqual(['--map-root-user', '--map-auto', '--mount']);
    expect(args.join(' ')).toContain('mount --make-shared "$share"');
    expect(args.at(-1)).toBe('sandbox=namespace');
  });
});
