import { providersOf } from '../credentials/providers.ts';
import type { PolicyDocument } from '../proxy/policy.ts';

// GET /v1/pipeline and GET /v1/plugins: our recording proxy described as Cortex describes its
// plugin pipeline, so agentop's Pipeline and Catalog panes show it. Every request out of a
// session passes the same three steps in order: the network policy decides, the credential broker
// swaps a stand-in key for the real one, the recorder writes the exchange to session.db. All three
// act on the agent's outbound calls; nothing here sits in front of an inbound service, so inbound
// is empty. Pure: the policy in, the description out.

/** The invocation action vocabulary of ../shared/spec/session-api.md. */
export type PluginAction = 'allow' | 'deny' | 'skip' | 'modify' | 'observe';

/** The plugin names events' invocations carry, so the panes and the event rows name the same steps. */
export const RECORDING_PLUGINS = ['policy', 'credential', 'recorder'] as const;
export type RecordingPlugin = (typeof RECORDING_PLUGINS)[number];

interface PluginSpec {
  readonly name: RecordingPlugin;
  readonly description: string;
  readonly capabilities: readonly string[];
  readonly actions: readonly PluginAction[];
}

const SPECS: readonly PluginSpec[] = [
  {
    name: 'policy',
    description:
      'Allows or refuses each destination by the ordered rules of the network policy; the first rule that matches decides, on the address actually dialled',
    capabilities: ['gate', 'headers.read'],
    actions: ['allow', 'deny'],
  },
  {
    name: 'credential',
    description:
      "Puts the host's provider key on a request to that provider's API hosts in place of the session's stand-in; a stand-in sent anywhere else is refused or let through as configured",
    capabilities: ['gate', 'headers.read', 'headers.write'],
    actions: ['modify', 'deny', 'skip'],
  },
  {
    name: 'recorder',
    description:
      "Records the exchange (headers, bodies, timing) into the session's session.db, then parses model calls, tool calls and MCP traffic out of it; a parser that fails costs only its own rows",
    capabilities: ['headers.read', 'body.read'],
    actions: ['observe'],
  },
];

export interface PipelineEntry {
  name: RecordingPlugin;
  direction: 'outbound';
  position: number;
  capabilities: readonly string[];
  config: Record<string, unknown>;
}

export interface Pipeline {
  inbound: PipelineEntry[];
  outbound: PipelineEntry[];
}

export interface CatalogEntry {
  name: RecordingPlugin;
  description: string;
  directions: readonly ['outbound'];
  capabilities: readonly string[];
  actions: readonly PluginAction[];
  active: boolean;
}

/** The runtime config of each step: what it would do now. Never a key: the broker's config names where keys go, not what they are. */
function configOf(name: RecordingPlugin, policy: PolicyDocument, policySource: string): Record<string, unknown> {
  switch (name) {
    case 'policy':
      return { source: policySource, privateAddresses: policy.privateAddresses, rules: policy.rules };
    case 'credential':
      return {
        standInElsewhere: policy.credentials.standInElsewhere,
        providers: providersOf(policy.credentials).map((p) => ({
          id: p.id,
          hosts: p.hosts,
          headers: p.headers.map((h) => h.name),
          ...(p.query ? { query: p.query } : {}),
        })),
      };
    case 'recorder':
      return { store: 'session.db', parses: ['model calls', 'tool calls', 'MCP'] };
  }
}

export function recordingPipeline(policy: PolicyDocument, policySource: string): Pipeline {
  return {
    inbound: [],
    outbound: SPECS.map((spec, position) => ({
      name: spec.name,
      direction: 'outbound',
      position,
      capabilities: spec.capabilities,
      config: configOf(spec.name, policy, policySource),
    })),
  };
}

/** Every plugin this build has; all are always active, since the pipeline is fixed. */
export function pluginCatalog(): { plugins: CatalogEntry[] } {
  return {
    plugins: SPECS.map((spec) => ({
      name: spec.name,
      description: spec.description,
      directions: ['outbound'],
      capabilities: spec.capabilities,
      actions: spec.actions,
      active: true,
    })),
  };
}
