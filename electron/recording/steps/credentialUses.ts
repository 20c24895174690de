import { providersOf } from '../../credentials/providers.ts';
import { STAND_IN_ELSEWHERE_RULE } from '../../credentials/credentialBroker.ts';
import { providerTableOf } from '../../policy/policy.ts';
import { credentialRefOf } from './exchangeFacts.ts';
import type { ExchangeStep } from './step.ts';

// What the credential broker did on an exchange: the key it used named on the exchange's row, a
// substitution_events row per stand-in seen, and for one seen away from its provider's hosts a
// security_rule_events row too (which provider's stand-in, which host, which process), refused or
// let through by the policy.

export const credentialUses: ExchangeStep = {
  name: 'credential',
  handles: 'exchange',
  reads: "the broker's record of each stand-in key the request carried",
  writes: ['net_events', 'substitution_events', 'security_rule_events'],
  description:
    "Puts the host's provider key on a request to that provider's API hosts in place of the session's stand-in; a stand-in sent anywhere else is refused or let through as configured",
  capabilities: ['gate', 'headers.read', 'headers.write'],
  actions: ['modify', 'deny', 'skip'],
  readsBody: false,
  config: (inUse) => {
    if ('error' in inUse) return { source: inUse.source, error: inUse.error };
    const policy = inUse.document;
    return {
      standInElsewhere: policy.credentials.standInElsewhere,
      providers: providersOf(policy.credentials, providerTableOf(policy)).map((p) => ({
        id: p.id,
        hosts: p.hosts,
        headers: p.headers.map((h) => h.name),
        ...(p.query ? { query: p.query } : {}),
      })),
    };
  },
  // Most exchanges carry no stand-in: they get no rows function, which each exchange would make for nothing.
  record: ({ ex, at }) => ({
    columns: { credential_ref: credentialRefOf(ex) },
    rows: ex.credentials?.length
      ? (eventId, sink) => {
          for (const use of ex.credentials ?? []) {
            sink.append('substitution_events', {
              net_event_id: eventId,
              timestamp: at,
              provider: use.provider,
              location: use.where,
              host: use.host,
              outcome: use.outcome,
              credential_ref: use.credentialRef,
              process_name: ex.processName,
              pid: ex.pid,
            });
            if (use.outcome === 'substituted') continue;
            sink.append('security_rule_events', {
              event_id: eventId,
              timestamp: at,
              timestamp_unix_ms: ex.startedAt.getTime(),
              event_type: 'credential.stand_in_elsewhere',
              rule_id: STAND_IN_ELSEWHERE_RULE,
              rule_action: use.outcome === 'refused' ? 'deny' : 'allow',
              detection_level: 'high',
              event_json: JSON.stringify({
                provider: use.provider,
                where: use.where,
                host: use.host,
                port: ex.port,
                process_name: ex.processName,
                pid: ex.pid,
                credential_ref: use.credentialRef,
              }),
            });
          }
        }
      : undefined,
  }),
};
