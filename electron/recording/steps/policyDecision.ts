import type { ExchangeStep } from './step.ts';

// The network policy acts in the proxy, before anything is recorded: it allows or refuses each
// destination. What the recording keeps of it is its verdict and the rule that gave it, on the
// exchange's own row; a refused exchange gets that row and nothing else.

export const policyDecision: ExchangeStep = {
  name: 'policy',
  handles: 'exchange',
  reads: "the proxy's verdict on the destination and the rule that gave it",
  writes: ['net_events'],
  description:
    'Allows or refuses each destination by the ordered rules of the network policy; the first rule that matches decides, on the address actually dialled',
  capabilities: ['gate', 'headers.read'],
  actions: ['allow', 'deny'],
  readsBody: false,
  config: (inUse) =>
    'error' in inUse
      ? { source: inUse.source, error: inUse.error }
      : { source: inUse.source, privateAddresses: inUse.document.privateAddresses, rules: inUse.document.rules },
  record: ({ ex }) => ({ columns: { decision: ex.decision, matched_rule: ex.matchedRule } }),
};
