import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll } from 'vitest';
import { findHostKernel } from '../../electron/vm/image/guestImage.ts';
import type { CapsemHome } from '../../electron/store/paths.ts';
import { findQemu, QemuBackend } from '../../electron/vm/qemuBackend.ts';
import { VmHost } from '../../electron/vm/vmHost.ts';
import type { ExecOptions, VmSession } from '../../electron/vm/vmSession.ts';
import { json, startUpstream, type Upstream } from './mockUpstreams.ts';
import { tempHome } from './tempHome.ts';

// A throwaway CAPSEM_HOME whose guest images come from the checkout's image cache (CAPSEM_IMAGE_CACHE,
// which vitest.config.ts sets for every test and this sets for the benches): images are cached by
// recipe hash, so a changed recipe still builds afresh, and an unchanged one (the agent image takes
// a minute or more) is built once per checkout, not in the user's own cache.

export const IMAGE_CACHE = fileURLToPath(new URL('../../.cache/images/', import.meta.url));

export function vmTestHome(): ReturnType<typeof tempHome> {
  process.env.CAPSEM_IMAGE_CACHE ||= IMAGE_CACHE;
  return tempHome();
}

/** Why real VMs cannot run here, or null when they can. */
export function vmUnavailable(): string | null {
  if (!findQemu()) return 'qemu-system-x86_64 is not installed';
  try {
    findHostKernel();
  } catch (err) {
    return (err as Error).message;
  }
  return null;
}

/** Why the agent image cannot be built here, or null. */
export function agentImageUnavailable(): string | null {
  if (process.getuid?.() !== 0) return 'building the agent image needs root (mmdebstrap)';
  return vmUnavailable();
}

/**
 * Boots an agent-image VM whose proxy sends `hosts` (port 443) to a local TLS upstream it trusts
 * by `upstreamCaPem`, plus any `extraResolve` entries (host:port=ip:port), as CAPSEM_RESOLVE does.
 */
export async function startAgentVm(
  home: CapsemHome,
  upstream: { readonly port: number; readonly caPem: string },
  hosts: readonly string[],
  extraResolve: readonly string[] = [],
): Promise<{ host: VmHost; session: VmSession }> {
  const caFile = join(home.root, 'upstream-ca.pem');
  writeFileSync(caFile, upstream.caPem);
  const resolve = [...hosts.map((h) => `${h}:443=127.0.0.1:${upstream.port}`), ...extraResolve].join(',');
  const host = new VmHost({
    home,
    backend: () => new QemuBackend(findQemu()!),
    hostEnv: { ...process.env, CAPSEM_RESOLVE: resolve, CAPSEM_UPSTREAM_CA_FILE: caFile },
  });
  const session = await host.start({ name: null, image: 'agent', command: ['test'] }, { status: () => {}, progress: () => {} });
  return { host, session };
}

/** Runs one command in a session's guest and collects what it printed and its exit code. */
export async function guestRun(
  session: VmSession,
  argv: string[],
  options: ExecOptions = {},
): Promise<{ out: string; err: string; code: number | null }> {
  const { stream, result } = session.exec(argv, options);
  let out = '';
  let err = '';
  stream.on('data', (c: Buffer) => (out += c.toString()));
  stream.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const { code } = await result;
  return { out, err, code };
}

/** The VM a describe block's tests share: its session, and the upstream its hosts go to. */
export interface SharedAgentVm {
  readonly session: VmSession;
  readonly upstream: Upstream;
}

/**
 * For a describe block: one agent-image VM in a home of its own, booted before the block's tests
 * and stopped after them, whose proxy sends `hosts` (port 443) to an upstream answering every
 * request with its path as JSON. Read `session` and `upstream` inside the tests.
 */
export function sharedAgentVm(hosts: readonly string[]): SharedAgentVm {
  const home = vmTestHome();
  let running: { host: VmHost; session: VmSession; upstream: Upstream } | null = null;
  beforeAll(async () => {
    const upHome = tempHome();
    const upstream = await startUpstream(upHome, [...hosts], (req, _body, res) => json(res, 200, { path: req.url }));
    upHome.remove();
    running = { ...(await startAgentVm(home, upstream, hosts)), upstream };
  }, 900_000);
  afterAll(async () => {
    await running?.host.stopAll();
    await running?.upstream.close();
    home.remove();
  });
  return {
    get session() {
      return running!.session;
    },
    get upstream() {
      return running!.upstream;
    },
  };
}
