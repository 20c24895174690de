import { providersOf } from '../credentials/providers.ts';
import { providerTableOf, type PolicyDocument } from '../policy/policy.ts';

// GET /v1/pipeline and GET /v1/plugins: our recording proxy described as Cortex describes its
// plugin pipeline, so agentop's Pipeline and Catalog panes show it. Every request out of a
// session passes the same three steps in order: the network policy decides, the credential broker
// swaps a stand-in key for the real one, the recorder writes the exchange to session.db. All three
// act on the agent's outbound calls; nothing here sits in front of an inbound service, so inbound
// is empty. Pure: the policy in, the description out. Field names and types follow Cortex's
// pipelinePluginView and CatalogEntry (authbridge/authlib/sessionapi/server.go): agentop decodes
// position as a 1-based int (0 hides it) and readsBody as a bool.

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
  readonly readsBody: boolean;
}

const SPECS: readonly PluginSpec[] = [
  {
    name: 'policy',
    description:
      'Allows or refuses each destination by the ordered rules of the network policy; the first rule that matches decides, on the address actually dialled',
    capabilities: ['gate', 'headers.read'],
    actions: ['allow', 'deny'],
    readsBody: false,
  },
  {
    name: 'credential',
    description:
      "Puts the host's provider key on a request to that provider's API hosts in place of the session's stand-in; a stand-in sent anywhere else is refused or let through as configured",
    capabilities: ['gate', 'headers.read', 'headers.write'],
    actions: ['modify', 'deny', 'skip'],
    readsBody: false,
  },
  {
    name: 'recorder',
    description:
      "Records the exchange (headers, bodies, timing) into the session's session.db, then parses model calls, tool calls and MCP traffic out of it; a parser that fails costs only its own rows",
    capabilities: ['headers.read', 'body.read'],
    actions: ['observe'],
    readsBody: true,
  },
];

export interface PipelineEntry {
  name: RecordingPlugin;
  direction: 'outbound';
  /** 1-based within its direction, as Cortex counts. */
  position: number;
  readsBody: boolean;
  description: string;
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
  direction: 'outbound';
  readsBody: boolean;
  directions: readonly ['outbound'];
  capabilities: readonly string[];
  actions: readonly PluginAction[];
  active: boolean;
}

/** The policy file in use, or why it could not be read: the pipeline is described either way. */
export type PolicyInUse =
  { readonly document: PolicyDocument; readonly source: string } | { readonly error: string; readonly source: string };

/**
 * The runtime config of each step: what it would do now. Never a key: the broker's config names
 * where keys go, not what they are. The policy and the broker both read the policy file, so an
 * unreadable one leaves both saying why instead of a config.
 */
function configOf(name: RecordingPlugin, inUse: PolicyInUse): Record<string, unknown> {
  if (name === 'recorder') return { store: 'session.db', parses: ['model calls', 'tool calls', 'MCP'] };
  if ('error' in inUse) return { source: inUse.source, error: inUse.error };
  const policy = inUse.document;
  if (name === 'policy') return { source: inUse.source, privateAddresses: policy.privateAddresses, rules: policy.rules };
  return {
    standInElsewhere: policy.credentials.standInElsewhere,
    providers: providersOf(policy.credentials, providerTableOf(policy)).map((p) => ({
      id: p.id,
      hosts: p.hosts,
      headers: p.headers.map((h) => h.name),
      ...(p.query ? { query: p.query } : {}),
    })),
  };
}

export function recordingPipeline(inUse: PolicyInUse): Pipeline {
  return {
    inbound: [],
    outbound: SPECS.map((spec, index) => ({
      name: spec.name,
      direction: 'outbound',
      position: index + 1,
      readsBody: spec.readsBody,
      description: spec.description,
      capabilities: spec.capabilities,
      config: configOf(spec.name, inUse),
    })),
  };
}

/** Every plugin this build has; all are always active, since the pipeline is fixed. */
export function pluginCatalog(): { plugins: CatalogEntry[] } {
  return {
    plugins: SPECS.map((spec) => ({
      name: spec.name,
      description: spec.description,
      direction: 'outbound',
      readsBody: spec.readsBody,
      directions: ['outbound'],
      capabilities: spec.capabilities,
      actions: spec.actions,
      active: true,
    })),
  };
}
