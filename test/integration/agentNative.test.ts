import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// The guest agent's own checks: its codec unit test under gcc -Werror, and its frame decoder and
// JSON reader fuzzed by libFuzzer (with ASan and UBSan) for a bounded time each run.

const AGENT_DIR = fileURLToPath(new URL('../../native/agent/', import.meta.url));
const has = (tool: string): boolean => spawnSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' }).status === 0;
const noGcc = has('gcc') && has('make') ? null : 'gcc and make are not installed';
const noClang = has('clang') ? null : 'clang is not installed (apt-get install clang libclang-rt-14-dev)';
const FUZZ_SECONDS = Number(process.env.CAPSEM_FUZZ_SECONDS ?? 15);

describe('guest agent (native)', () => {
  it.skipIf(noGcc !== null)(`builds without warnings and passes its codec unit test${noGcc ? ` (skipped: ${noGcc})` : ''}`, () => {
    const check = spawnSync('make', ['-s', '-C', AGENT_DIR, 'check'], { encoding: 'utf8' });
    expect(check.stderr).not.toMatch(/warning:/);
    expect(check.status, check.stderr).toBe(0);
    expect(check.stdout).toContain('capsem-agent 0.1.0 protocol 2');
  });

  it.skipIf(noClang !== null)(
    `survives ${FUZZ_SECONDS} s of libFuzzer on its frame decoder and JSON reader${noClang ? ` (skipped: ${noClang})` : ''}`,
    () => {
      const fuzz = spawnSync('sh', [`${AGENT_DIR}fuzz/run.sh`, String(FUZZ_SECONDS)], { encoding: 'utf8' });
      const stats = /stat::number_of_executed_units:\s*(\d+)/.exec(fuzz.stderr);
      expect(fuzz.status, fuzz.stderr.split('\n').slice(-20).join('\n')).toBe(0);
      expect(Number(stats?.[1] ?? 0)).toBeGreaterThan(1000);
    },
    (FUZZ_SECONDS + 120) * 1000,
  );
});
