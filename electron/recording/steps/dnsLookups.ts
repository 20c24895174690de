import { writesTo, type EventStep } from './step.ts';

// The lookups the guest's DNS answerer answered, one dns_events row each.

export const dnsLookups: EventStep<'lookup'> = {
  name: 'dns',
  handles: 'lookup',
  reads: "a lookup the guest's DNS answerer answered: name, type, answer, the policy's verdict",
  writes: ['dns_events'],
  description: "Records each DNS lookup the guest makes, with the policy's verdict on the name and the addresses it resolved to",
  capabilities: [],
  actions: ['observe'],
  readsBody: false,
  config: writesTo(['dns_events']),
  record: (lookup) => [
    {
      table: 'dns_events',
      row: {
        timestamp: lookup.startedAt.toISOString(),
        name: lookup.name,
        type: lookup.type,
        rcode: lookup.rcode,
        answers: JSON.stringify(lookup.answers),
        resolved: JSON.stringify(lookup.resolved),
        decision: lookup.decision,
        matched_rule: lookup.matchedRule,
        process_name: lookup.processName,
        pid: lookup.pid,
        duration_ms: lookup.durationMs,
        error_message: lookup.error,
      },
    },
  ],
};
