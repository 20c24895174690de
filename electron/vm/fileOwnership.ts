import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { folderHolds, realPathOr } from './realFolders.ts';

// Who owns what the guest writes in the workspace. virtiofsd creates files with the credentials it
// runs under, mapped from the guest's: run by root it keeps the guest's owners as they are; run by
// an ordinary user it cannot even start its sandbox (setgroups is refused), and the C virtiofsd
// 7.2 has no uid translation of its own. So an ordinary user's virtiofsd runs in a user namespace
// where the guest's root is that user (--map-root-user) and the guest's other ids are the user's
// subordinate ids (--map-auto, through newuidmap): what the agent makes is the user's, and the
// user's files are the guest root's to change. That namespace also owns a mount namespace, where a
// private tmpfs takes /run: virtiofsd writes its pid file to /var/run/virtiofsd, which an ordinary
// user cannot create.

export type OwnershipPlan =
  | { readonly kind: 'root' }
  | { readonly kind: 'user-namespace'; readonly unshare: string; readonly user: string; readonly subuid: string }
  | { readonly kind: 'unavailable'; readonly problem: string; readonly fix: string };

/** What decides the plan, gathered from the machine by `hostFacts`. */
export interface OwnershipFacts {
  readonly uid: number;
  readonly user: string;
  readonly unshare: string | null;
  readonly newuidmap: string | null;
  readonly newgidmap: string | null;
  /** /etc/subuid and /etc/subgid, or null when unreadable. */
  readonly subuid: string | null;
  readonly subgid: string | null;
  /** /proc/sys/user/max_user_namespaces. */
  readonly maxUserNamespaces: number | null;
  /** /proc/sys/kernel/unprivileged_userns_clone, on kernels that have it (Debian's before 6.x). */
  readonly unprivilegedUsernsClone: number | null;
}

const APT = 'sudo apt-get install -y --no-install-recommends';

/** The user's first subordinate range in a subuid/subgid file, as "start:count", or null. */
export function subordinateRange(file: string | null, user: string, uid: number): string | null {
  for (const line of (file ?? '').split('\n')) {
    const [owner, start, count] = line.trim().split(':');
    if ((owner === user || owner === String(uid)) && /^\d+$/.test(start ?? '') && /^[1-9]\d*$/.test(count ?? ''))
      return `${start}:${count}`;
  }
  return null;
}

/** A free range to suggest: past every range the file already hands out. */
function freeRange(file: string | null): string {
  let end = 100_000;
  for (const line of (file ?? '').split('\n')) {
    const [, start, count] = line.trim().split(':');
    if (/^\d+$/.test(start ?? '') && /^\d+$/.test(count ?? '')) end = Math.max(end, Number(start) + Number(count));
  }
  return `${end}-${end + 65_535}`;
}

export function planOwnership(facts: OwnershipFacts): OwnershipPlan {
  if (facts.uid === 0) return { kind: 'root' };
  const missing = (problem: string, fix: string): OwnershipPlan => ({
    kind: 'unavailable',
    problem: `to share the workspace as ${facts.user}, ${problem}`,
    fix,
  });
  if (!facts.unshare) return missing('capsem needs unshare', `${APT} util-linux`);
  if (!facts.newuidmap || !facts.newgidmap) return missing('capsem needs newuidmap and newgidmap', `${APT} uidmap`);
  if (facts.maxUserNamespaces === 0 || facts.unprivilegedUsernsClone === 0) {
    return missing(
      'user namespaces must be enabled',
      facts.unprivilegedUsernsClone === 0
        ? 'sudo sysctl -w kernel.unprivileged_userns_clone=1'
        : 'sudo sysctl -w user.max_user_namespaces=15000',
    );
  }
  const subuid = subordinateRange(facts.subuid, facts.user, facts.uid);
  const subgid = subordinateRange(facts.subgid, facts.user, facts.uid);
  if (!subuid || !subgid) {
    const range = freeRange(`${facts.subuid ?? ''}\n${facts.subgid ?? ''}`);
    const what = !subuid && !subgid ? '/etc/subuid and /etc/subgid' : !subuid ? '/etc/subuid' : '/etc/subgid';
    return missing(
      `${what} must give ${facts.user} a range of subordinate ids`,
      `sudo usermod --add-subuids ${range} --add-subgids ${range} ${facts.user}`,
    );
  }
  return { kind: 'user-namespace', unshare: facts.unshare, user: facts.user, subuid };
}

function onPath(name: string): string | null {
  const found = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
  return found.status === 0 ? found.stdout.trim() || null : null;
}

function readOr(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}

function numberIn(path: string): number | null {
  const text = readOr(path)?.trim();
  return text && /^\d+$/.test(text) ? Number(text) : null;
}

export function hostFacts(): OwnershipFacts {
  const uid = process.getuid?.() ?? 0;
  return {
    uid,
    user: userInfo().username,
    unshare: uid === 0 ? null : onPath('unshare'),
    newuidmap: uid === 0 ? null : onPath('newuidmap'),
    newgidmap: uid === 0 ? null : onPath('newgidmap'),
    subuid: readOr('/etc/subuid'),
    subgid: readOr('/etc/subgid'),
    maxUserNamespaces: numberIn('/proc/sys/user/max_user_namespaces'),
    unprivilegedUsernsClone: numberIn('/proc/sys/kernel/unprivileged_userns_clone'),
  };
}

/**
 * Where the namespace's private tmpfs goes: over /run (where /var/run leads), unless the workspace
 * or the socket's folder is under it; then over /var, and virtiofsd makes its /var/run afresh.
 */
export function pidFolderMount(needed: readonly string[], varRun = realPathOr('/var/run')): string {
  const real = needed.map(realPathOr);
  const target = [varRun, '/var'].find((candidate) => real.every((path) => !folderHolds(candidate, path)));
  if (!target)
    throw new Error(
      `virtiofsd needs a private ${varRun} or /var, and ${real.join(' and ')} lie under them; put CAPSEM_HOME and the project folder elsewhere`,
    );
  return target;
}

/** The command that runs virtiofsd on `source` with its socket at `socket`, as the plan says. */
export function virtiofsdCommand(
  plan: OwnershipPlan,
  virtiofsd: string,
  socket: string,
  source: string,
  mountTarget: () => string,
): { readonly file: string; readonly args: readonly string[] } {
  const options = [`--socket-path=${socket}`, '-o', `source=${source}`, '-o', 'cache=auto'];
  if (plan.kind === 'root') return { file: virtiofsd, args: [...options, '-o', 'sandbox=chroot'] };
  if (plan.kind === 'unavailable') throw new Error(`${plan.problem} (${plan.fix}); run capsem doctor`);
  const script = 'mount -t tmpfs -o mode=0755 capsem-virtiofsd "$1" && shift && exec "$@"';
  return inUserNamespace(plan.unshare, script, [mountTarget(), virtiofsd, ...options, '-o', 'sandbox=namespace']);
}

/** `sh -c script capsem-virtiofsd ...args` as root of a user and mount namespace of its own (an ordinary user's virtiofsd). */
function inUserNamespace(
  unshare: string,
  script: string,
  args: readonly string[],
): { readonly file: string; readonly args: readonly string[] } {
  return { file: unshare, args: ['--map-root-user', '--map-auto', '--mount', '--', 'sh', '-c', script, 'capsem-virtiofsd', ...args] };
}

/** The folders a share that starts empty works through (a VM booted ahead of its session). */
export interface EmptyShare {
  /** The empty folder virtiofsd serves; each adopted folder is bound in it under a random name. */
  readonly dir: string;
  /** A FIFO the binder reads "NAME PATH" lines from. */
  readonly fifo: string;
  /** Where the binder says how each bind went: NAME.ok, or NAME.err holding the error. */
  readonly results: string;
}

// Binds each folder it is sent into the share, in virtiofsd's own mount namespace, so the mount
// is seen by virtiofsd alone (and by the guest through it), never by the host at large. Tied to
// virtiofsd's life by pdeathsig: it is started by the shell that then becomes virtiofsd.
const BINDER =
  'share=$1 fifo=$2 results=$3; exec 3<>"$fifo"; while IFS= read -r line <&3; do name=${line%% *}; src=${line#* }; ' +
  'if { mkdir "$share/$name" && mount --bind -- "$src" "$share/$name"; } 2>"$results/.$name"; ' +
  'then mv "$results/.$name" "$results/$name.ok"; else mv "$results/.$name" "$results/$name.err"; fi; done';

/**
 * virtiofsd on an empty share with its binder beside it, in a mount namespace of their own. As
 * root: `unshare --mount` and virtiofsd's chroot sandbox, which stays in that namespace. As an
 * ordinary user: virtiofsd's namespace sandbox makes a namespace of its own, a slave of this one,
 * so the share is made a shared mount here and each bind propagates into virtiofsd's copy.
 */
export function emptyShareCommand(
  plan: OwnershipPlan,
  paths: { readonly virtiofsd: string; readonly unshare: string; readonly setpriv: string },
  socket: string,
  share: EmptyShare,
  mountTarget: () => string,
): { readonly file: string; readonly args: readonly string[] } {
  const options = [`--socket-path=${socket}`, '-o', `source=${share.dir}`, '-o', 'cache=auto'];
  const binder = `"$setpriv" --pdeathsig KILL -- sh -c '${BINDER}' capsem-binder "$share" "$fifo" "$results" &`;
  const start = 'share=$1 fifo=$2 results=$3 setpriv=$4; shift 4';
  const binderArgs = [share.dir, share.fifo, share.results, paths.setpriv];
  if (plan.kind === 'root')
    return {
      file: paths.unshare,
      args: [
        '--mount',
        '--propagation',
        'private',
        '--',
        'sh',
        '-c',
        `${start}; ${binder} exec "$@"`,
        'capsem-virtiofsd',
        ...binderArgs,
        paths.virtiofsd,
        ...options,
        '-o',
        'sandbox=chroot',
      ],
    };
  if (plan.kind === 'unavailable') throw new Error(`${plan.problem} (${plan.fix}); run capsem doctor`);
  const shared = 'mount --bind "$share" "$share" && mount --make-shared "$share"';
  return inUserNamespace(
    plan.unshare,
    `${start}; mount -t tmpfs -o mode=0755 capsem-virtiofsd "$1" && shift && ${shared} && { ${binder} } && exec "$@"`,
    [...binderArgs, mountTarget(), paths.virtiofsd, ...options, '-o', 'sandbox=namespace'],
  );
}
