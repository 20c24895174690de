import { mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { agentBinary } from '../../electron/vm/agentBinary.ts';
import { ensureImage } from '../../electron/vm/image/guestImage.ts';
import { imageBootPlan } from '../../electron/vm/image/imagePlan.ts';
import { PreparedVm } from '../../electron/vm/preparedVm.ts';
import { findQemu, QemuBackend } from '../../electron/vm/qemuBackend.ts';
import { VmHost } from '../../electron/vm/vmHost.ts';
import { DEFAULT_VM_CPUS, DEFAULT_VM_MEMORY_MIB, VmSession } from '../../electron/vm/vmSession.ts';
import { caFiles, CertificateAuthority } from '../../electron/proxy/certificateAuthority.ts';
import { agentImageUnavailable, guestRun, vmTestHome } from '../helpers/vmTestHome.ts';
import type { AgentMux } from '../../electron/vm/mux.ts';
import { sessionMeta } from '../helpers/sessionRows.ts';

// A VM booted ahead and adopted by a session: before adoption it has no session id, no keys and
// an empty /workspace; once adopted, the session's folder is at /workspace (bound in virtiofsd's
// own mount namespace, never in the host's) and its id and stand-in keys are in the guest's
// environment. A spare that has died is not adopted: the session boots its own VM.

const missing = agentImageUnavailable();
const KEY = 'sk-ant-api03-spare-test-key-0123456789abcdef';

/** Runs `script` in a not-yet-adopted VM through its agent, as the read-ahead does. */
function spareRun(mux: AgentMux, script: string): Promise<{ out: string; code: number | null }> {
  return new Promise((resolve, reject) => {
    const stream = mux.open({ kind: 'exec', argv: ['sh', '-c', script], cwd: '/', stdin: false });
    stream.end();
    let out = '';
    stream.on('data', (c: Buffer) => (out += c.toString()));
    stream.stderr.on('data', (c: Buffer) => (out += c.toString()));
    stream.on('close', () => resolve({ out, code: stream.exitStatus?.code ?? null }));
    stream.on('error', reject);
  });
}

async function waitFor(what: string, check: () => boolean, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > until) throw new Error(`${what} did not happen within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe.skipIf(missing !== null)(`a VM booted ahead${missing ? ` (skipped: ${missing})` : ''}`, () => {
  const home = vmTestHome();
  const folder = realpathSync(mkdtempSync(join(tmpdir(), 'capsem-spare-project-')));
  writeFileSync(join(folder, 'marker.txt'), 'the session folder\n');
  afterAll(() => {
    home.remove();
    rmSync(folder, { recursive: true, force: true });
  });

  // The image's hash from ensureImage: the cache's fingerprint file is shared by every checkout using it, so it is not asked.
  let imageHash = '';

  it('gets its folder, session id and keys only when adopted', { timeout: 400_000 }, async () => {
    imageHash = (await ensureImage(home, 'agent', { agentBinary: agentBinary() })).hash;
    await CertificateAuthority.load(home);
    const plan = imageBootPlan(home, 'agent');
    const prepared = await PreparedVm.boot({
      home,
      backend: new QemuBackend(findQemu()!),
      plan: (dir) => plan({ dir }, caFiles(home).certPath),
      memoryMiB: DEFAULT_VM_MEMORY_MIB,
      cpus: DEFAULT_VM_CPUS,
    });
    const before = await spareRun(prepared.mux, 'echo "id=$CAPSEM_SESSION_ID key=$ANTHROPIC_API_KEY"; ls -A /workspace; echo end');
    expect(before.code).toBe(0);
    expect(before.out).toBe('id= key=\nend\n');
    const readAhead = await prepared.readAheadResult();
    expect(readAhead.error).toBeNull();

    const session = await VmSession.start({
      home,
      command: ['test'],
      backend: new QemuBackend(findQemu()!),
      plan: () => Promise.reject(new Error('an adopted VM is not booted')),
      hostEnv: { ...process.env, ANTHROPIC_API_KEY: KEY },
      projectFolder: folder,
      image: 'agent',
      prepared,
    });
    try {
      const inside = await guestRun(session, [
        'sh',
        '-c',
        'cat /workspace/marker.txt; echo "id=$CAPSEM_SESSION_ID"; echo "key=$ANTHROPIC_API_KEY"',
      ]);
      expect(inside.code).toBe(0);
      const lines = inside.out.split('\n');
      expect(lines[0]).toBe('the session folder');
      expect(lines[1]).toBe(`id=${session.id}`);
      // A stand-in, never the real key.
      expect(lines[2]).toMatch(/^key=sk-ant-/);
      expect(lines[2]).not.toContain(KEY);
      // What the guest writes lands in the session's folder.
      expect((await guestRun(session, ['sh', '-c', 'echo from-guest > /workspace/made.txt'])).code).toBe(0);
      expect(readFileSync(join(folder, 'made.txt'), 'utf8')).toBe('from-guest\n');
      // The bind is virtiofsd's alone: the host's mount table never shows it.
      expect(readFileSync('/proc/self/mountinfo', 'utf8')).not.toContain(folder);
      // On the host the share holds only the empty folder the bind was made on.
      const share = join(prepared.runDir, 'share');
      const [name, ...others] = readdirSync(share);
      expect(others).toEqual([]);
      expect(readdirSync(join(share, name!))).toEqual([]);
    } finally {
      await session.stop();
    }
    const meta = sessionMeta(session.paths.dbPath);
    expect(meta.vm_spare).toBe(prepared.name);
    expect(Number(meta.vm_adopt_ms)).toBeGreaterThan(0);
    // Its console log moved into the session folder with it.
    expect(readFileSync(session.paths.serialLogPath, 'utf8')).toContain('capsem-init');
  });

  it('a spare that died is not adopted: the session boots its own', { timeout: 400_000 }, async () => {
    const problems: string[] = [];
    const host = new VmHost({
      home,
      backend: () => new QemuBackend(findQemu()!),
      spareVm: () => true,
      spareImageHash: () => imageHash,
      onSpareProblem: (m) => problems.push(m),
    });
    try {
      await waitFor(`a spare booting (${problems.join('; ')})`, () => host.spareReady, 200_000);
      const vms = join(home.runDir, 'vms');
      const spareDir = readdirSync(vms).find((d) => d.startsWith('spare-'))!;
      const { pids } = JSON.parse(readFileSync(join(vms, spareDir, 'pids.json'), 'utf8')) as { pids: number[] };
      process.kill(pids[0]!, 'SIGKILL');
      await waitFor('the pool seeing its spare die', () => !host.spareReady, 10_000);
      expect(problems.join('\n')).toMatch(/ended while it waited/);
      const session = await host.start({ name: null, image: 'agent', command: ['test'] }, { status: () => {}, progress: () => {} });
      await session.stop();
      expect(sessionMeta(session.paths.dbPath).vm_spare).toBeUndefined();
    } finally {
      await host.stopAll();
    }
    expect(readdirSync(join(home.runDir, 'vms')).filter((d) => d.startsWith('spare-'))).toEqual([]);
  });
});
