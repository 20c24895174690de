import { existsSync, readFileSync, unwatchFile, watchFile } from 'node:fs';
import { BlockList, isIP } from 'node:net';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { z } from 'zod';
import type { CapsemHome } from '../store/paths.ts';

// Ordered allow/deny rules on domain (exact, `*.suffix` or `*`), port and method; the first that
// matches decides. Separately, a destination that resolves to loopback, private or link-local
// space is refused unless a rule names its host (not the catch-all) or CAPSEM_RESOLVE sends it
// there on purpose: that check runs on the address actually dialled (see the proxy's lookup).

const ruleSchema = z.object({
  id: z.string().min(1),
  action: z.enum(['allow', 'deny']),
  domains: z.array(z.string().min(1)).min(1),
  ports: z.array(z.number().int().min(1).max(65535)).optional(),
  methods: z.array(z.string().min(1)).optional(),
});
const policySchema = z.object({
  version: z.literal(1),
  description: z.string().optional(),
  rules: z.array(ruleSchema),
  privateAddresses: z.enum(['deny', 'allow']).default('deny'),
});

export type PolicyRule = z.infer<typeof ruleSchema>;
export type PolicyDocument = z.infer<typeof policySchema>;

export interface Decision {
  readonly action: 'allow' | 'deny';
  /** The id of the rule that decided, or `default.no-rule` when none matched. */
  readonly rule: string;
  /** True when the deciding rule names this host itself, not through `*`. */
  readonly explicit: boolean;
}

export const DEFAULT_POLICY_PATH = fileURLToPath(new URL('../../resources/policy.default.json', import.meta.url));
export const PRIVATE_ADDRESS_RULE = 'default.deny-private-address';

export function parsePolicy(text: string, source: string): PolicyDocument {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new Error(`policy ${source} is not valid JSON: ${(err as Error).message}`);
  }
  const parsed = policySchema.safeParse(json);
  if (!parsed.success) throw new Error(`policy ${source} is invalid: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return parsed.data;
}

function domainMatches(pattern: string, host: string): 'exact' | 'wildcard' | null {
  const p = pattern.toLowerCase();
  if (p === '*') return 'wildcard';
  if (p.startsWith('*.')) return host.endsWith(p.slice(1)) ? 'exact' : null;
  return p === host ? 'exact' : null;
}

export function decide(policy: PolicyDocument, host: string, port: number, method: string): Decision {
  const name = host.toLowerCase().replace(/\.$/, '');
  for (const rule of policy.rules) {
    if (rule.ports && !rule.ports.includes(port)) continue;
    if (rule.methods && !rule.methods.some((m) => m.toUpperCase() === method.toUpperCase())) continue;
    const how = rule.domains.map((d) => domainMatches(d, name)).find((m) => m !== null);
    if (how) return { action: rule.action, rule: rule.id, explicit: how === 'exact' };
  }
  return { action: 'deny', rule: 'default.no-rule', explicit: false };
}

const privateSpace = new BlockList();
for (const [net, bits] of [['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12], ['192.168.0.0', 16]] as const) {
  privateSpace.addSubnet(net, bits, 'ipv4');
}
for (const [net, bits] of [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10]] as const) privateSpace.addSubnet(net, bits, 'ipv6');

/** Loopback, private, link-local, CGNAT or unspecified: space a web page must not reach through the proxy. */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  if (family === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
    if (mapped) return privateSpace.check(mapped[1]!, 'ipv4');
    return privateSpace.check(address, 'ipv6');
  }
  return privateSpace.check(address, 'ipv4');
}

/** The active policy: CAPSEM_HOME/policy.json when present, else the shipped default; reloaded on change. */
export class PolicyStore {
  private current: PolicyDocument;
  lastError: string | null = null;
  readonly path: string;

  constructor(home: CapsemHome | null, explicitPath?: string) {
    const userPath = home ? join(home.root, 'policy.json') : null;
    this.path = explicitPath ?? (userPath && existsSync(userPath) ? userPath : DEFAULT_POLICY_PATH);
    this.current = parsePolicy(readFileSync(this.path, 'utf8'), this.path);
  }

  get policy(): PolicyDocument {
    return this.current;
  }

  decide(host: string, port: number, method: string): Decision {
    return decide(this.current, host, port, method);
  }

  /** Re-reads the file; a broken edit keeps the previous policy and is reported in lastError. */
  reload(): boolean {
    try {
      this.current = parsePolicy(readFileSync(this.path, 'utf8'), this.path);
      this.lastError = null;
      return true;
    } catch (err) {
      this.lastError = (err as Error).message;
      return false;
    }
  }

  /** Polls the file (robust to editors that replace it by rename) and reloads on change. */
  watch(intervalMs = 500): () => void {
    const onChange = (): void => void this.reload();
    watchFile(this.path, { interval: intervalMs, persistent: false }, onChange);
    return () => unwatchFile(this.path, onChange);
  }
}
