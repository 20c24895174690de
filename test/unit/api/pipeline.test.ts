import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { pluginCatalog, RECORDING_PLUGINS, recordingPipeline } from '../../../electron/api/pipeline.ts';
import { DEFAULT_POLICY_PATH, parsePolicy } from '../../../electron/policy/policy.ts';

const ACTIONS = ['allow', 'deny', 'skip', 'modify', 'observe'];

describe('the recording pipeline as Cortex plugins', () => {
  const policy = parsePolicy(readFileSync(DEFAULT_POLICY_PATH, 'utf8'), DEFAULT_POLICY_PATH);

  it('is policy, then credential, then recorder, all on the outbound path', () => {
    const pipeline = recordingPipeline({ document: policy, source: DEFAULT_POLICY_PATH });
    expect(pipeline.inbound).toEqual([]);
    expect(pipeline.outbound.map((p) => [p.name, p.direction, p.position])).toEqual([
      ['policy', 'outbound', 1],
      ['credential', 'outbound', 2],
      ['recorder', 'outbound', 3],
    ]);
    expect(pipeline.outbound.map((p) => p.name)).toEqual([...RECORDING_PLUGINS]);
  });

  it("carries the policy's rules and the broker's hosts as runtime config, never a key", () => {
    const withKeys = parsePolicy(
      JSON.stringify({
        version: 1,
        rules: [{ id: 'r1', action: 'allow', domains: ['*'] }],
        credentials: { standInElsewhere: 'allow', hosts: { anthropic: ['llm.corp.example'] } },
      }),
      'test',
    );
    const [policyStep, broker] = recordingPipeline({ document: withKeys, source: '/home/me/.capsem/policy.json' }).outbound;
    expect(policyStep!.config).toEqual({
      source: '/home/me/.capsem/policy.json',
      privateAddresses: 'deny',
      rules: [{ id: 'r1', action: 'allow', domains: ['*'] }],
    });
    expect(broker!.config.standInElsewhere).toBe('allow');
    expect(broker!.config.providers).toContainEqual({
      id: 'anthropic',
      hosts: ['llm.corp.example'],
      headers: ['x-api-key', 'authorization'],
    });
    expect(JSON.stringify(broker!.config)).not.toMatch(/sk-|AIza|_API_KEY/);
  });

  it('catalogs each step with actions from the spec vocabulary only', () => {
    const { plugins } = pluginCatalog();
    expect(plugins.map((p) => p.name)).toEqual([...RECORDING_PLUGINS]);
    for (const p of plugins) {
      expect(p.active).toBe(true);
      expect(p.actions.length).toBeGreaterThan(0);
      for (const a of p.actions) expect(ACTIONS).toContain(a);
    }
    expect(plugins.find((p) => p.name === 'recorder')!.actions).toEqual(['observe']);
  });
});
