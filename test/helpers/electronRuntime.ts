import { accessSync, constants, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));

/**
 * The Electron binary, found the way scripts/start.mjs finds it, or why there is none: `npm i
 * electron` downloads it from GitHub, which some machines cannot reach.
 */
export function electronRuntime(): { readonly ok: true; readonly binary: string } | { readonly ok: false; readonly why: string } {
  const dir = join(root, 'node_modules', 'electron');
  if (!existsSync(dir)) return { ok: false, why: 'no Electron runtime: the electron package is not installed' };
  const pathFile = join(dir, 'path.txt');
  if (!existsSync(pathFile))
    return { ok: false, why: 'no Electron runtime: node_modules/electron has no binary (its download host is unreachable here)' };
  const binary = join(dir, 'dist', readFileSync(pathFile, 'utf8').trim());
  try {
    accessSync(binary, constants.X_OK);
  } catch {
    return { ok: false, why: `no Electron runtime: ${binary} is missing or not executable` };
  }
  return { ok: true, binary };
}
