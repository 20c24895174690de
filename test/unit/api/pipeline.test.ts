import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { pluginCatalog, recordingPipeline } from '../../../electron/api/pipeline.ts';
import { RECORDING_PIPELINE } from '../../../electron/recording/pipeline.ts';
import { DEFAULT_POLICY_PATH, parsePolicy } from '../../../electron/policy/policy.ts';

const ACTIONS = ['allow', 'deny', 'skip', 'modify', 'observe'];

describe('the recording pipeline as Cortex plugins', () => {
  const policy = parsePolicy(readFileSync(DEFAULT_POLICY_PATH, 'utf8'), DEFAULT_POLICY_PATH);

  it('is the list the recorder runs, in its order, all on the outbound path', () => {
    const pipeline = recordingPipeline({ document: policy, source: DEFAULT_POLICY_PATH });
    expect(pipeline.inbound).toEqual([]);
    expect(pipeline.outbound.map((p) => [p.name, p.direction, p.position])).toEqual([
      ['policy', 'outbound', 1],
      ['exchange', 'outbound', 2],
      ['model-calls', 'outbound', 3],
      ['mcp', 'outbound', 4],
      ['agent-story', 'outbound', 5],
      ['credential', 'outbound', 6],
      ['bodies', 'outbound', 7],
      ['websocket-frames', 'outbound', 8],
      ['dns', 'outbound', 9],
      ['file-changes', 'outbound', 10],
      ['commands', 'outbound', 11],
    ]);
    expect(pipeline.outbound.map((p) => p.name)).toEqual(RECORDING_PIPELINE.map((s) => s.name));
  });

  it('gives each recording step the tables it writes as its config', () => {
    const { outbound } = recordingPipeline({ document: policy, source: DEFAULT_POLICY_PATH });
    expect(outbound.find((p) => p.name === 'model-calls')!.config).toEqual({
      store: 'session.db',
      tables: ['model_calls', 'model_items', 'tool_calls', 'tool_responses'],
    });
    expect(outbound.find((p) => p.name === 'dns')!.config).toEqual({ store: 'session.db', tables: ['dns_events'] });
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
    const { outbound } = recordingPipeline({ document: withKeys, source: '/home/me/.capsem/policy.json' });
    const policyStep = outbound.find((p) => p.name === 'policy');
    const broker = outbound.find((p) => p.name === 'credential');
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
    expect(plugins.map((p) => p.name)).toEqual(RECORDING_PIPELINE.map((s) => s.name));
    for (const p of plugins) {
      expect(p.active).toBe(true);
      expect(p.actions.length).toBeGreaterThan(0);
      for (const a of p.actions) expect(ACTIONS).toContain(a);
    }
    expect(plugins.find((p) => p.name === 'exchange')!.actions).toEqual(['observe']);
  });
});
