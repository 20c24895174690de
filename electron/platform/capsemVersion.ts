import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// The version `owner.info` reports. Found by walking up to our package.json, because this file
// sits at different depths in a source checkout and in a packaged build.

let cached: string | null = null;

export function capsemVersion(): string {
  if (cached !== null) return cached;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: unknown; version?: unknown };
      if (pkg.name === 'capsem-desktop' && typeof pkg.version === 'string') return (cached = pkg.version);
    } catch {
      // No package.json at this level (or not ours): keep climbing.
    }
    const parent = dirname(dir);
    if (parent === dir) return (cached = 'unknown');
    dir = parent;
  }
}
