import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCapsemAsync } from '../helpers/runCapsem.ts';
import { tempHome } from '../helpers/tempHome.ts';
import { vmUnavailable } from '../helpers/vmTestHome.ts';

// Two CAPSEM_HOMEs of one user share one image cache: the first `capsem run` builds the minimal
// image (seconds; the agent image's minutes are the reason for the cache), the second home's first
// run boots what the first built. Both runs' times are printed, the figure a second home gains.

const noVm = vmUnavailable();

describe.skipIf(noVm !== null)(`the image cache across CAPSEM_HOMEs${noVm ? ` (skipped: ${noVm})` : ''}`, () => {
  let cache = '';
  let homes: ReturnType<typeof tempHome>[] = [];
  // Made in beforeAll: a skipped suite runs its body but never its afterAll.
  beforeAll(() => {
    cache = mkdtempSync(join(tmpdir(), 'capsem-shared-cache-'));
    homes = [tempHome(), tempHome()];
  });
  afterAll(() => {
    for (const home of homes) home.remove();
    rmSync(cache, { recursive: true, force: true });
  });

  it('a second home boots the image the first built, without building it again', async () => {
    const run = async (root: string) => {
      const started = performance.now();
      const result = await runCapsemAsync(
        root,
        ['run', '--image', 'minimal', '--', 'echo', 'ran'],
        { CAPSEM_IMAGE_CACHE: cache },
        { timeoutMs: 170_000 },
      );
      return { ...result, ms: Math.round(performance.now() - started) };
    };
    const first = await run(homes[0]!.root);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toBe('ran\n');
    expect(first.stderr).toMatch(/✓ initramfs \d/);
    const built = readdirSync(cache).filter((name) => name.startsWith('minimal-'));
    expect(built).toHaveLength(1);

    const second = await run(homes[1]!.root);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toBe('ran\n');
    expect(second.stderr).not.toMatch(/✓ initramfs/);
    expect(readdirSync(cache).filter((name) => name.startsWith('minimal-'))).toEqual(built);
    for (const home of homes) expect(existsSync(join(home.root, 'images'))).toBe(false);
    console.log(`minimal image, capsem run -- echo: first home (builds) ${first.ms} ms, second home (shared cache) ${second.ms} ms`);
  }, 360_000);
});
