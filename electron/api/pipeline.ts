import { RECORDING_PIPELINE, type PolicyInUse, type StepAction } from '../recording/pipeline.ts';

// GET /v1/pipeline and GET /v1/plugins: the recording pipeline (recording/pipeline.ts) described as
// Cortex describes its plugin pipeline, so agentop's Pipeline and Catalog panes show it. Every
// step acts on what the agent does outward (its requests, lookups, file changes, commands);
// nothing here sits in front of an inbound service, so inbound is empty. Pure: the policy in, the
// description out, read off the list the recorder runs. Field names and types follow Cortex's
// pipelinePluginView and CatalogEntry (authbridge/authlib/sessionapi/server.go): agentop decodes
// position as a 1-based int (0 hides it) and readsBody as a bool.

export type { PolicyInUse };

export interface PipelineEntry {
  name: string;
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
  name: string;
  description: string;
  direction: 'outbound';
  readsBody: boolean;
  directions: readonly ['outbound'];
  capabilities: readonly string[];
  actions: readonly StepAction[];
  active: boolean;
}

/**
 * Each step with its runtime config, what it would do now. Never a key: the broker's config names
 * where keys go, not what they are. The policy and the broker both read the policy file, so an
 * unreadable one leaves both saying why instead of a config.
 */
export function recordingPipeline(inUse: PolicyInUse): Pipeline {
  return {
    inbound: [],
    outbound: RECORDING_PIPELINE.map((step, index) => ({
      name: step.name,
      direction: 'outbound',
      position: index + 1,
      readsBody: step.readsBody,
      description: step.description,
      capabilities: step.capabilities,
      config: step.config(inUse),
    })),
  };
}

/** Every plugin this build has; all are always active, since the pipeline is fixed. */
export function pluginCatalog(): { plugins: CatalogEntry[] } {
  return {
    plugins: RECORDING_PIPELINE.map((step) => ({
      name: step.name,
      description: step.description,
      direction: 'outbound',
      readsBody: step.readsBody,
      directions: ['outbound'],
      capabilities: step.capabilities,
      actions: step.actions,
      active: true,
    })),
  };
}
