import { chownSync, cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentBinary } from '../../electron/vm/agentBinary.ts';
import { ensureImage } from '../../electron/vm/image/guestImage.ts';
import { runCapsemAsync } from '../helpers/runCapsem.ts';
import { asUser, ensureTestUser, type TestUser } from '../helpers/unprivilegedUser.ts';
import { vmTestHome, vmUnavailable } from '../helpers/vmTestHome.ts';

// `capsem run --workspace DIR` run by an ordinary user, as most people run it: what the guest's root
// makes in the folder is that user's on the host, and the user's own files are the guest's to
// change. The user (made once when the tests run as root) has its own CAPSEM_HOME, with the minimal
// image copied in from the shared cache, and runs capsem from a folder of its own.

const noVm = vmUnavailable();
const user = noVm === null ? ensureTestUser() : noVm;
const skip = typeof user === 'string' ? user : null;

describe.skipIf(skip !== null)(`capsem run --workspace as an ordinary user${skip ? ` (skipped: ${skip})` : ''}`, () => {
  const who = user as TestUser;
  let root: string;
  let userHome: string;
  let project: string;
  const agent = agentBinary();
  const run = (args: readonly string[]) =>
    runCapsemAsync(
      userHome,
      args,
      { HOME: who.home, CAPSEM_AGENT_BINARY: agent, CAPSEM_IMAGE_CACHE: join(root, 'image-cache') },
      { asUser: { setpriv: asUser(who), cwd: root }, timeoutMs: 170_000 },
    );

  beforeAll(async () => {
    // Folders the user owns; the user cannot enter this checkout's image cache, so the image is copied
    // where an older version kept it, which the user's first run imports into a cache of its own.
    root = mkdtempSync(join(tmpdir(), 'capsem-user-'));
    userHome = join(root, 'capsem-home');
    project = join(root, 'project');
    const shared = vmTestHome();
    try {
      const image = await ensureImage(shared, 'minimal', { agentBinary: agent });
      cpSync(image.dir, join(userHome, 'images', basename(image.dir)), { recursive: true });
    } finally {
      shared.remove();
    }
    mkdirSync(project);
    writeFileSync(join(project, 'had.txt'), 'the user wrote this\n', { mode: 0o644 });
    chownR(root, who);
  }, 300_000);
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it("makes what the guest's root writes the user's, and lets the guest change the user's own file", async () => {
    const script = 'ls -ln had.txt; echo the guest added this >> had.txt && echo new > made.txt && mkdir sub && echo deeper > sub/file.txt';
    const r = await run(['run', '--image', 'minimal', '--workspace', 'project', '--', 'sh', '-c', script]);
    expect(r.code, r.stderr).toBe(0);
    // The guest sees the user's file as its root's: root may write it.
    expect(r.stdout).toMatch(/^-rw-r--r-- +1 0 +0 +20 .* had\.txt\n$/);
    expect(readFileSync(join(project, 'had.txt'), 'utf8')).toBe('the user wrote this\nthe guest added this\n');
    for (const made of ['made.txt', 'sub', join('sub', 'file.txt'), 'had.txt']) {
      const st = statSync(join(project, made));
      expect({ made, uid: st.uid, gid: st.gid }).toEqual({ made, uid: who.uid, gid: who.gid });
    }
    expect(readFileSync(join(project, 'sub', 'file.txt'), 'utf8')).toBe('deeper\n');
  }, 180_000);

  it('capsem doctor, run by that user, says the files will be theirs', async () => {
    const r = await run(['doctor', '--json']);
    const findings = JSON.parse(r.stdout) as { check: string; level: string; detail: string }[];
    expect(findings.find((f) => f.check === 'file ownership')).toMatchObject({
      level: 'ok',
      detail: expect.stringMatching(new RegExp(`user namespace .* are ${who.name}'s`)),
    });
  }, 60_000);
});

function chownR(path: string, who: TestUser): void {
  chownSync(path, who.uid, who.gid);
  if (statSync(path).isDirectory()) for (const entry of readdirSync(path)) chownR(join(path, entry), who);
}
