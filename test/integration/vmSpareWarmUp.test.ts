import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { agentBinary } from '../../electron/vm/agentBinary.ts';
import { ensureImage } from '../../electron/vm/image/guestImage.ts';
import { imageBootPlan } from '../../electron/vm/image/imagePlan.ts';
import { PreparedVm } from '../../electron/vm/preparedVm.ts';
import { findQemu, QemuBackend } from '../../electron/vm/qemuBackend.ts';
import { DEFAULT_VM_CPUS, DEFAULT_VM_MEMORY_MIB, VmSession } from '../../electron/vm/vmSession.ts';
import { caFiles, CertificateAuthority } from '../../electron/proxy/certificateAuthority.ts';
import { agentImageUnavailable, guestRun, vmTestHome } from '../helpers/vmTestHome.ts';
import { sessionMeta } from '../helpers/sessionRows.ts';

// A spare starts Claude Code once in a HOME of its own (agentWarmUp.ts) so the adopted session's
// first start is not the first after boot. None of it may reach the session: not its HOME, not
// what Claude Code writes under /tmp, not a process, whether the warm-up had ended or a Start
// came while it ran.

const missing = agentImageUnavailable();

/** What a session could see of a warm-up: its folders and Claude Code's under /tmp, its HOME's files in root's, its processes. */
const LEFTOVERS = [
  'ls -d /tmp/capsem-warm-up-* /tmp/claude-* /tmp/cc-socks /root/.claude /root/.claude.json 2>/dev/null',
  'grep -l CAPSEM_WARM_UP /proc/[0-9]*/environ 2>/dev/null',
  'echo end',
].join('; ');

describe.skipIf(missing !== null)(`a spare's warm-up${missing ? ` (skipped: ${missing})` : ''}`, () => {
  const home = vmTestHome();
  const folder = realpathSync(mkdtempSync(join(tmpdir(), 'capsem-warm-up-project-')));
  writeFileSync(join(folder, 'marker.txt'), 'the session folder\n');
  afterAll(() => {
    home.remove();
    rmSync(folder, { recursive: true, force: true });
  });

  async function spare(): Promise<PreparedVm> {
    await ensureImage(home, 'agent', { agentBinary: agentBinary() });
    await CertificateAuthority.load(home);
    const plan = imageBootPlan(home, 'agent');
    return PreparedVm.boot({
      home,
      backend: new QemuBackend(findQemu()!),
      plan: (dir) => plan({ dir }, caFiles(home).certPath),
      memoryMiB: DEFAULT_VM_MEMORY_MIB,
      cpus: DEFAULT_VM_CPUS,
    });
  }

  async function adopt(prepared: PreparedVm): Promise<VmSession> {
    return VmSession.start({
      home,
      command: ['test'],
      backend: new QemuBackend(findQemu()!),
      plan: () => Promise.reject(new Error('an adopted VM is not booted')),
      projectFolder: folder,
      image: 'agent',
      prepared,
    });
  }

  it('reaches Claude Code’s prompt, and the session that adopts the spare finds nothing of it', { timeout: 400_000 }, async () => {
    const prepared = await spare();
    const warmUp = await prepared.warmUpResult();
    expect(warmUp).toMatchObject({ outcome: 'prompt', error: null, cleaned: true });
    const session = await adopt(prepared);
    try {
      const seen = await guestRun(session, ['sh', '-c', LEFTOVERS]);
      expect(seen.out).toBe('end\n');
      expect((await guestRun(session, ['cat', '/workspace/marker.txt'])).out).toBe('the session folder\n');
    } finally {
      await session.stop();
    }
    expect(sessionMeta(session.paths.dbPath).vm_spare_warm_up).toMatch(/^prompt after \d+ ms$/);
  });

  it(
    'a Start while the warm-up runs stops it first: its HOME and processes are gone before the session gets the VM',
    { timeout: 400_000 },
    async () => {
      const prepared = await spare();
      await prepared.readAheadResult();
      // Well into Claude Code's start (10 s or more to its prompt here), its HOME and /tmp files made.
      await new Promise((r) => setTimeout(r, 3000));
      const session = await adopt(prepared);
      try {
        expect(await prepared.warmUpResult()).toMatchObject({ outcome: 'stopped', cleaned: true });
        const seen = await guestRun(session, ['sh', '-c', LEFTOVERS]);
        expect(seen.out).toBe('end\n');
      } finally {
        await session.stop();
      }
      expect(sessionMeta(session.paths.dbPath).vm_spare_warm_up).toMatch(/^stopped after \d+ ms$/);
    },
  );
});
