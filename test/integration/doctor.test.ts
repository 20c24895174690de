import { afterAll, describe, expect, it } from 'vitest';
import { GUEST_IMAGES } from '../../electron/contract/guestImages.ts';
import { runCapsemAsync } from '../helpers/runCapsem.ts';
import { tempHome } from '../helpers/tempHome.ts';

// capsem doctor as a user runs it: every check named, and a missing piece comes with the command
// that fixes it and a failing exit code.

const home = tempHome();
afterAll(() => home.remove());

describe('capsem doctor', () => {
  it('names each check, says which accelerator runs VMs and why, and passes when all is installed', async () => {
    const r = await runCapsemAsync(home.root, ['doctor', '--json']);
    const findings = JSON.parse(r.stdout) as { check: string; level: string; detail: string; fix?: string }[];
    expect(findings.map((f) => f.check)).toEqual([
      'qemu',
      'virtiofsd',
      'file ownership',
      'setpriv',
      'accelerator',
      'guest kernel',
      'agent build',
      'image cache',
      // One per guest image, in the list's order: 'agent image', 'minimal image'.
      ...GUEST_IMAGES.map((image) => image.label),
      'owner',
      'api port',
      'anthropic key',
      'openai key',
      'gemini key',
    ]);
    expect(findings.find((f) => f.check === 'accelerator')!.detail).toMatch(/KVM|TCG/);
    // The images are the user's, not the home's: the folder (CAPSEM_IMAGE_CACHE here) and its size.
    expect(findings.find((f) => f.check === 'image cache')).toMatchObject({
      level: 'ok',
      detail: expect.stringMatching(
        new RegExp(`^${process.env.CAPSEM_IMAGE_CACHE!.replace(/\/$/, '')}: \\d+ MiB, shared by every CAPSEM_HOME`),
      ),
    });
    expect(r.code).toBe(findings.some((f) => f.level === 'fail') ? 1 : 0);
  });

  it('reports a missing QEMU as a failure with the command that installs it', async () => {
    const r = await runCapsemAsync(home.root, ['doctor'], { CAPSEM_QEMU: '/nonexistent/qemu-system-x86_64' });
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^FAIL +qemu +qemu-system-x86_64 is not installed$/m);
    expect(r.stdout).toMatch(/fix: apt-get install -y --no-install-recommends qemu-system-x86$/m);
  });
});
