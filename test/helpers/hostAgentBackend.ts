import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LaunchSpec, VmBackend, VmExit, VmInstance } from '../../electron/vm/backend.ts';
import { ensurePrivateDir } from '../../electron/store/paths.ts';
import type { BootPlan } from '../../electron/vm/vmSession.ts';

// The guest agent run as a plain host process, talking over a unix socket instead of a
// virtio-serial port: the supervisor, the mux, the proxy hand-over and the recording all run for
// real, without a VM. Tests that need the sandbox itself boot QEMU; these need only the agent.

const AGENT_DIR = fileURLToPath(new URL('../../native/agent/', import.meta.url));
export const AGENT_BINARY = join(AGENT_DIR, 'build', 'capsem-agent');

/** Builds the agent (incremental); returns why it cannot, or null. */
export function buildAgent(): string | null {
  if (spawnSync('sh', ['-c', 'command -v gcc && command -v make'], { stdio: 'ignore' }).status !== 0)
    return 'gcc and make are not installed';
  const built = spawnSync('make', ['-s', '-C', AGENT_DIR], { encoding: 'utf8' });
  if (built.status !== 0) return `building the agent failed: ${built.stderr.trim().split('\n').slice(-3).join(' ')}`;
  return existsSync(AGENT_BINARY) ? null : 'the agent build produced no binary';
}

/**
 * The boot plan for this backend: nothing to boot (the agent runs on this machine), the folder and
 * proxy port the test chose, PATH, and the session's CA for curl when given; `guestEnv` adds or
 * overrides.
 */
export function hostAgentPlan(
  guestWorkspace: string,
  guestProxyPort: number,
  caPem: string | null,
  guestEnv: Readonly<Record<string, string>> = {},
): BootPlan {
  return {
    kernel: '',
    initrd: '',
    cmdline: '',
    disks: [],
    guestWorkspace,
    guestProxyPort,
    guestEnv: { ...(caPem === null ? {} : { CURL_CA_BUNDLE: caPem }), PATH: process.env.PATH ?? '/usr/bin:/bin', ...guestEnv },
  };
}

export class HostAgentBackend implements VmBackend {
  readonly name = 'host-agent';
  /** The agent's process, once launched (tests kill it to simulate a crash). */
  pid: number | null = null;
  private port: Socket | null = null;

  constructor(private readonly workspace: string) {}

  /** Everything the agent has sent the host so far: what the guest's output has cost the host. */
  get bytesFromAgent(): number {
    return this.port?.bytesRead ?? 0;
  }

  async launch(spec: LaunchSpec): Promise<VmInstance> {
    ensurePrivateDir(spec.runDir);
    const path = join(spec.runDir, 'agent.sock');
    const server = createServer();
    await new Promise<void>((r) => server.listen(path, r));
    const accepted = new Promise<Socket>((r) => server.once('connection', (socket: Socket) => r((this.port = socket))));
    const child = spawn(AGENT_BINARY, ['--connect', path, '--shell', '/bin/sh', '--workspace', this.workspace], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    this.pid = child.pid ?? null;
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-4096)));
    const exited = new Promise<VmExit>((resolve) =>
      child.once('exit', (code, signal) => {
        server.close();
        resolve({ code, signal, stderr: stderr.trim() });
      }),
    );
    return {
      accelerator: { accel: 'tcg', reason: 'no VM: the agent runs as a host process (test backend)' },
      pids: child.pid ? [child.pid] : [],
      exited,
      connectAgentPort: async (timeoutMs) => {
        const timer = new Promise<never>((_, reject) =>
          setTimeout(() => reject(new Error(`agent did not connect within ${timeoutMs} ms`)), timeoutMs).unref(),
        );
        return Promise.race([accepted, timer]);
      },
      kill: async () => {
        child.kill('SIGKILL');
        return exited;
      },
    };
  }
}
