import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { DEFAULT_API_PORT } from '../api/server.ts';
import { findKey } from '../credentials/credentialBroker.ts';
import { HomeKeyStore, LOCKED_KEY_TEXT } from '../credentials/homeKeyStore.ts';
import { PolicyStore } from '../policy/policy.ts';
import { BUILT_IN_PROVIDERS } from '../telemetry/providers/index.ts';
import { agentKeyNames } from '../vm/agentCredentials.ts';
import { findOwner } from '../owner/ownership.ts';
import { imageCacheDir, type CapsemHome } from '../store/paths.ts';
import { DEFAULT_IMAGE_KIND, GUEST_IMAGES, type ImageKind } from '../contract/guestImages.ts';
import { probeAccelerator } from '../vm/accel.ts';
import { hostFacts, planOwnership, type OwnershipFacts } from '../vm/fileOwnership.ts';
import { findHostKernel } from '../vm/image/guestImage.ts';
import { imageCacheBytes } from '../vm/image/imageCache.ts';
import { buildTools, IMAGE_RECIPES } from '../vm/image/imageRecipe.ts';
import { findQemu } from '../vm/qemuBackend.ts';
import { parseCommandArgs, type Command } from './context.ts';

// What running VMs needs on this machine, checked one by one, each problem with the exact fix.

type Level = 'ok' | 'warn' | 'fail';

export interface Finding {
  readonly check: string;
  readonly level: Level;
  readonly detail: string;
  readonly fix?: string;
}

const APT = 'apt-get install -y --no-install-recommends';

function tool(name: string): string | null {
  const found = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
  return found.status === 0 ? found.stdout.trim() : null;
}

function version(command: string, args: string[]): string {
  const out = spawnSync(command, args, { encoding: 'utf8' });
  return (out.stdout ?? '').split('\n')[0]?.trim() ?? '';
}

async function portFree(port: number): Promise<boolean> {
  const server = createServer();
  return new Promise((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

function cachedImages(dir: string, kind: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).filter((name) => name.startsWith(`${kind}-`) && existsSync(join(dir, name, 'manifest.json')));
}

/** Whether an image of `kind` is built or can be, and what to install when it cannot. */
function imageFinding(cacheDir: string, kind: ImageKind, label: string): Finding {
  const built = cachedImages(cacheDir, kind);
  const tools = buildTools(kind);
  const missingOf = (wanted: Readonly<Record<string, string>>) => Object.keys(wanted).filter((command) => !tool(command));
  const missing = { initramfs: missingOf(tools.initramfs), rootfs: missingOf(tools.rootfs) };
  const commands = [...missing.initramfs, ...missing.rootfs];
  if (commands.length > 0)
    return {
      check: label,
      // A built image still needs what hashes its initramfs's inputs; the root file system's tools only build.
      level: built.length > 0 && missing.initramfs.length === 0 ? 'warn' : 'fail',
      detail: `cannot be built: ${commands.join(', ')} missing`,
      fix: `${APT} ${commands.map((command) => tools.initramfs[command] ?? tools.rootfs[command]).join(' ')}`,
    };
  const firstRun = kind === DEFAULT_IMAGE_KIND ? 'capsem run' : `capsem run --image ${kind}`;
  return {
    check: label,
    level: 'ok',
    detail:
      built.length > 0
        ? `built (${built.join(', ')})`
        : `not built yet; the first \`${firstRun}\` builds it (${IMAGE_RECIPES[kind].firstBuild})`,
  };
}

/** Whose files the guest's writes in the workspace become, or what is missing for them to be the user's. */
export function ownershipFinding(facts: OwnershipFacts): Finding {
  const plan = planOwnership(facts);
  if (plan.kind === 'root')
    return {
      check: 'file ownership',
      level: 'ok',
      detail: "virtiofsd runs as root: files the guest makes in the workspace are root's, who runs capsem",
    };
  if (plan.kind === 'user-namespace')
    return {
      check: 'file ownership',
      level: 'ok',
      detail: `virtiofsd runs in a user namespace (subordinate ids ${plan.subuid}): files the guest makes in the workspace are ${plan.user}'s`,
    };
  return { check: 'file ownership', level: 'fail', detail: `${plan.problem}; without it no VM can start`, fix: plan.fix };
}

export async function diagnose(home: CapsemHome, env: NodeJS.ProcessEnv = process.env): Promise<Finding[]> {
  const findings: Finding[] = [];
  const add = (f: Finding): void => void findings.push(f);
  const qemu = findQemu(env);
  if (qemu) add({ check: 'qemu', level: 'ok', detail: `${qemu.qemu} (${version(qemu.qemu, ['--version'])})` });
  else add({ check: 'qemu', level: 'fail', detail: 'qemu-system-x86_64 is not installed', fix: `${APT} qemu-system-x86` });
  if (qemu?.virtiofsd) add({ check: 'virtiofsd', level: 'ok', detail: qemu.virtiofsd });
  else
    add({
      check: 'virtiofsd',
      level: 'fail',
      detail: 'virtiofsd (shares the workspace) was not found',
      fix: `${APT} qemu-system-x86 (it ships /usr/lib/qemu/virtiofsd)`,
    });
  add(ownershipFinding(hostFacts()));
  if (qemu?.setpriv) add({ check: 'setpriv', level: 'ok', detail: 'VM processes die with the app even if it is killed' });
  else
    add({
      check: 'setpriv',
      level: 'warn',
      detail: 'without setpriv a killed app leaves its VMs running until the next start cleans them up',
      fix: `${APT} util-linux`,
    });
  const accel = probeAccelerator();
  add({
    check: 'accelerator',
    level: accel.accel === 'kvm' ? 'ok' : 'warn',
    detail: accel.reason,
    ...(accel.accel === 'tcg'
      ? { fix: 'on a machine with VT-x/AMD-V: enable virtualisation in the firmware and give this user /dev/kvm (usermod -aG kvm $USER)' }
      : {}),
  });
  try {
    const kernel = findHostKernel();
    add({ check: 'guest kernel', level: 'ok', detail: `${kernel.path} (${kernel.version})` });
  } catch (err) {
    add({ check: 'guest kernel', level: 'fail', detail: (err as Error).message, fix: `${APT} linux-image-cloud-amd64` });
  }
  const missing = (names: string[]): string[] => names.filter((n) => !tool(n));
  const buildTools = missing(['gcc', 'make']);
  add(
    buildTools.length === 0
      ? { check: 'agent build', level: 'ok', detail: 'gcc and make build the guest agent' }
      : {
          check: 'agent build',
          level: 'fail',
          detail: `${buildTools.join(', ')} missing: the guest agent cannot be built`,
          fix: `${APT} build-essential`,
        },
  );
  const cacheDir = imageCacheDir(env);
  add({
    check: 'image cache',
    level: 'ok',
    detail: `${cacheDir}: ${(imageCacheBytes(cacheDir) / 2 ** 20).toFixed(0)} MiB, shared by every CAPSEM_HOME of this user (CAPSEM_IMAGE_CACHE moves it)`,
  });
  for (const image of GUEST_IMAGES) add(imageFinding(cacheDir, image.id, image.label));
  const apiPort = DEFAULT_API_PORT;
  const owner = await findOwner(home);
  if (owner) {
    add({
      check: 'owner',
      level: 'ok',
      detail: `pid ${owner.info.pid} (${owner.info.kind}: ${owner.info.command}) owns ${home.root}; VM commands go through it`,
    });
    owner.client.close();
  } else add({ check: 'owner', level: 'ok', detail: `nobody owns ${home.root}; the next VM command becomes its owner` });
  if (await portFree(apiPort)) add({ check: 'api port', level: 'ok', detail: `127.0.0.1:${apiPort} is free for capsem api` });
  else
    add({
      check: 'api port',
      level: 'warn',
      detail: `127.0.0.1:${apiPort} is taken (capsem api may already run)`,
      fix: `capsem api --port ${apiPort + 1}, or stop what listens there (ss -ltnp 'sport = :${apiPort}')`,
    });
  findings.push(...providerKeyFindings(home, env));
  return findings;
}

/** Which providers have a key and where it comes from; the key itself is never read out. */
export function providerKeyFindings(home: CapsemHome, env: NodeJS.ProcessEnv): Finding[] {
  let providers;
  try {
    providers = new PolicyStore(home).keyProviders;
  } catch (err) {
    return [{ check: 'provider keys', level: 'warn', detail: (err as Error).message }];
  }
  const store = new HomeKeyStore(home);
  // A built-in provider no agent needs is named only once it has a key: a missing one is no problem.
  const needed = new Set(agentKeyNames());
  const optional = (id: string): boolean => !needed.has(id) && BUILT_IN_PROVIDERS.some((p) => p.key?.name === id);
  return providers.flatMap((provider): Finding[] => {
    const check = `${provider.id} key`;
    try {
      const found = findKey(provider, env, store);
      if (!found && store.locked(provider.id)) {
        return [
          {
            check,
            level: 'warn',
            detail: `${LOCKED_KEY_TEXT}; a session this command owns cannot use it`,
            fix: `start the Capsem app (capsem commands then run through it), or export ${provider.env[0]}=... in the shell you start capsem from`,
          },
        ];
      }
      if (!found && optional(provider.id)) return [];
      if (!found)
        return [
          {
            check,
            level: 'warn',
            detail: `none: agents that need it will say so; requests to ${provider.hosts.join(', ')} get no key`,
            fix: `export ${provider.env[0]}=... in the shell you start capsem from`,
          },
        ];
      const where = found.source.kind === 'env' ? `from ${found.source.variable} in this environment` : `stored in ${found.source.store}`;
      return [{ check, level: 'ok', detail: `${where}; sessions get a stand-in, the proxy adds the key on ${provider.hosts.join(', ')}` }];
    } catch (err) {
      return [{ check, level: 'warn', detail: (err as Error).message }];
    }
  });
}

export const doctorCommand: Command = {
  name: 'doctor',
  summary: 'check what running VMs needs here, with the fix for each problem',
  usage: `capsem doctor [--json]

Checks QEMU and virtiofsd, that files the guest makes in the workspace will be yours (as an
ordinary user: newuidmap and a subordinate id range), KVM (or why TCG is used), the guest kernel, the tools that build the
guest images and whether they are built, who owns CAPSEM_HOME, the API port, and which
providers have a key and where it comes from (never the key). Each problem
comes with the command that fixes it. Exits 1 when something needed is missing.`,
  async run(ctx, argv) {
    const { values } = parseCommandArgs(this, argv, { json: { type: 'boolean' } });
    const findings = await diagnose(ctx.home);
    if (values.json) ctx.out(JSON.stringify(findings, null, 2));
    else {
      const width = Math.max(...findings.map((f) => f.check.length));
      for (const f of findings) {
        ctx.out(`${f.level.toUpperCase().padEnd(4)}  ${f.check.padEnd(width)}  ${f.detail}`);
        if (f.fix) ctx.out(`${' '.repeat(6 + width)}  fix: ${f.fix}`);
      }
    }
    return findings.some((f) => f.level === 'fail') ? 1 : 0;
  },
};
