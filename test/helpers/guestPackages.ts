import { cpSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../../', import.meta.url));

/** Copies an npm package and its dependencies from this checkout into a guest's workspace, for its own Node to require. */
export function copyPackageClosure(name: string, dest: string, seen = new Set<string>()): void {
  if (seen.has(name)) return;
  seen.add(name);
  const from = join(REPO, 'node_modules', name);
  cpSync(from, join(dest, 'node_modules', name), { recursive: true, dereference: true });
  const pkg = JSON.parse(readFileSync(join(from, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
  for (const dep of Object.keys(pkg.dependencies ?? {})) copyPackageClosure(dep, dest, seen);
}
