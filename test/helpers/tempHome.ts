import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { capsemHome, type CapsemHome } from '../../electron/store/paths.ts';

/** A throwaway CAPSEM_HOME; call `remove` in afterEach/afterAll. */
export function tempHome(): CapsemHome & { remove: () => void } {
  const root = mkdtempSync(join(tmpdir(), 'capsem-test-'));
  return { ...capsemHome({ CAPSEM_HOME: root }), remove: () => rmSync(root, { recursive: true, force: true }) };
}
