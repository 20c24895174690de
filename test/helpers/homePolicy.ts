import { readFileSync, writeFileSync } from 'node:fs';
import type { CapsemHome } from '../../electron/store/paths.ts';

interface DefaultPolicy {
  readonly rules: unknown[];
  readonly [section: string]: unknown;
}

/** The policy Capsem ships, as a test starts from it. */
export function defaultPolicy(): DefaultPolicy {
  return JSON.parse(readFileSync(new URL('../../resources/policy.default.json', import.meta.url), 'utf8')) as DefaultPolicy;
}

/** Writes CAPSEM_HOME's policy.json: the shipped policy with `change` made to it (given the defaults, it returns the sections to replace). */
export function writeHomePolicy(home: CapsemHome, change: (defaults: DefaultPolicy) => Record<string, unknown>): void {
  const defaults = defaultPolicy();
  writeFileSync(`${home.root}/policy.json`, JSON.stringify({ ...defaults, ...change(defaults) }));
}
