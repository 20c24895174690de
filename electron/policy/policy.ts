import { existsSync, readFileSync, unwatchFile, watchFile } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { z } from 'zod';
import type { CapsemHome } from '../store/paths.ts';
import { credentialsSettings, DEFAULT_CREDENTIALS_SETTINGS, providersOf, type Provider } from '../credentials/providers.ts';
import type { ProviderTable } from '../telemetry/providers/index.ts';
import { canonicalHost } from './addresses.ts';
import { providersSettings, tableWith } from './policyProviders.ts';

// Ordered allow/deny rules on domain (exact name, IP address, `*.suffix` or `*`), port and method;
// the first that matches decides. Rule domains are kept in canonical form, so a rule on an address
// matches every spelling of it. A rule naming an address also applies to the address a name
// resolves to (decideAddress, on the address actually dialled). Separately, a destination in
// loopback, private or link-local space is refused unless a rule names its host or address
// exactly (not through `*` or `*.suffix`), or CAPSEM_RESOLVE sends it there on purpose.

/** A rule's domain in the form hosts are compared in; anything else is refused when the policy loads. */
const ruleDomain = z
  .string()
  .min(1)
  .transform((domain, ctx) => {
    if (domain === '*') return domain;
    const wildcard = domain.startsWith('*.');
    const canonical = canonicalHost(wildcard ? domain.slice(2) : domain);
    if (canonical === null || (wildcard && canonical.kind === 'address')) {
      ctx.addIssue({ code: 'custom', message: `"${domain}" is not a host name, an IP address, *.suffix or *` });
      return z.NEVER;
    }
    return wildcard ? `*.${canonical.host}` : canonical.host;
  });

const ruleSchema = z.object({
  id: z.string().min(1),
  action: z.enum(['allow', 'deny']),
  domains: z.array(ruleDomain).min(1),
  ports: z.array(z.number().int().min(1).max(65535)).optional(),
  methods: z.array(z.string().min(1)).optional(),
});
const policySchema = z.object({
  version: z.literal(1),
  description: z.string().optional(),
  rules: z.array(ruleSchema),
  privateAddresses: z.enum(['deny', 'allow']).default('deny'),
  /** Provider keys: each provider's API hosts, extra providers, and what a stand-in elsewhere gets (credentials/providers.ts). */
  credentials: credentialsSettings.default(DEFAULT_CREDENTIALS_SETTINGS),
  /** Model providers beyond the built-in ones (policyProviders.ts): recorded, priced and brokered as theirs are. */
  providers: providersSettings,
});

export type PolicyRule = z.infer<typeof ruleSchema>;
export type PolicyDocument = z.infer<typeof policySchema>;

export interface Decision {
  readonly action: 'allow' | 'deny';
  /** The id of the rule that decided, or `default.no-rule` when none matched. */
  readonly rule: string;
  /** True when the deciding rule names this host or address itself, not through `*` or `*.suffix`. */
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
  if (!parsed.success)
    throw new Error(`policy ${source} is invalid: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return parsed.data;
}

const tables = new WeakMap<PolicyDocument, ProviderTable>();

/** The provider table under a policy: the built-in providers and the policy's own, built once per policy read. */
export function providerTableOf(policy: PolicyDocument): ProviderTable {
  let table = tables.get(policy);
  if (!table) {
    table = tableWith(policy.providers);
    tables.set(policy, table);
  }
  return table;
}

function domainMatches(pattern: string, host: string): 'exact' | 'wildcard' | null {
  if (pattern === '*') return 'wildcard';
  // A suffix names no single host: it must not open private space to every name under it.
  if (pattern.startsWith('*.')) return host.endsWith(pattern.slice(1)) ? 'wildcard' : null;
  return pattern === host ? 'exact' : null;
}

/** Without a method (a connection shared by requests of any method), a rule that names methods does not apply. */
function ruleApplies(rule: PolicyRule, port: number, method: string | undefined): boolean {
  if (rule.ports && !rule.ports.includes(port)) return false;
  if (!rule.methods) return true;
  return method !== undefined && rule.methods.some((m) => m.toUpperCase() === method.toUpperCase());
}

/** The decision for a host, in whatever spelling it came (rules are compared in canonical form). */
export function decide(policy: PolicyDocument, host: string, port: number, method: string | undefined): Decision {
  const name = canonicalHost(host)?.host ?? host.toLowerCase();
  for (const rule of policy.rules) {
    if (!ruleApplies(rule, port, method)) continue;
    const matches = rule.domains.map((d) => domainMatches(d, name));
    if (matches.some((m) => m !== null)) return { action: rule.action, rule: rule.id, explicit: matches.includes('exact') };
  }
  return { action: 'deny', rule: 'default.no-rule', explicit: false };
}

/**
 * Whether a name may be looked up: a lookup names no port and no method, so it is allowed when
 * a connection to the name would be allowed on some port with some method (or none), and denied
 * only when every one would be. The ports and methods rules name, plus one port and no method
 * that no rule names, cover every case the first-match order can tell apart.
 */
export function decideName(policy: PolicyDocument, host: string): Decision {
  const ports = new Set<number>([443, 80]);
  const methods = new Set<string | undefined>([undefined]);
  for (const rule of policy.rules) {
    for (const port of rule.ports ?? []) ports.add(port);
    for (const method of rule.methods ?? []) methods.add(method.toUpperCase());
  }
  let unnamed = 1;
  while (ports.has(unnamed)) unnamed += 1;
  ports.add(unnamed);
  let refusal: Decision | null = null;
  for (const port of ports) {
    for (const method of methods) {
      const decision = decide(policy, host, port, method);
      if (decision.action === 'allow') return decision;
      refusal ??= decision;
    }
  }
  return refusal!;
}

/**
 * The first rule that names this address exactly, for the address a name resolved to: a deny
 * there refuses the connection whatever name led to it. Null when no rule names the address.
 */
export function decideAddress(policy: PolicyDocument, address: string, port: number, method?: string): Decision | null {
  for (const rule of policy.rules) {
    if (ruleApplies(rule, port, method) && rule.domains.includes(address)) return { action: rule.action, rule: rule.id, explicit: true };
  }
  return null;
}

/** Where a policy comes from: the file in use, and the file a user edits to change it. */
export interface PolicyFiles {
  readonly inUse: string;
  readonly editable: string;
}

/**
 * How to let one refused private destination through: the rule that names it exactly, where it
 * goes, and the broader switch. Said in the refusal itself, since that is where a user meets it.
 */
export function privateDestinationAdvice(host: string, port: number, files: PolicyFiles): string {
  const rule = JSON.stringify({ id: `allow-${host}`, action: 'allow', domains: [host], ports: [port] });
  const where = files.inUse === files.editable ? files.editable : `${files.editable} (copy ${files.inUse} there first)`;
  return `To allow it, add the rule ${rule} to "rules" in ${where}, before the "*" rule (the first rule that matches decides); or set "privateAddresses": "allow" there, which opens all private space. The policy reloads when the file changes.`;
}

/** Where a user's own policy lives: CAPSEM_HOME/policy.json. */
export function userPolicyPath(home: CapsemHome): string {
  return join(home.root, 'policy.json');
}

/** The active policy: CAPSEM_HOME/policy.json when present, else the shipped default; reloaded on change. */
export class PolicyStore {
  private current: PolicyDocument;
  private inUse: string;
  /** CAPSEM_HOME/policy.json, watched even before it exists: creating it takes effect at once. */
  private readonly userPath: string | null;
  private readonly fallbackPath: string;
  /** Counts the policies loaded: whoever holds connections checked under an older one drops them. */
  generation = 0;
  lastError: string | null = null;

  constructor(home: CapsemHome | null, explicitPath?: string) {
    this.userPath = explicitPath === undefined && home ? userPolicyPath(home) : null;
    this.fallbackPath = explicitPath ?? DEFAULT_POLICY_PATH;
    this.inUse = this.chosenPath();
    this.current = parsePolicy(readFileSync(this.inUse, 'utf8'), this.inUse);
  }

  /** The file the policy in use was read from. */
  get path(): string {
    return this.inUse;
  }

  get policy(): PolicyDocument {
    return this.current;
  }

  /** The providers that take a key under the policy in use, as the credential broker sees them. */
  get keyProviders(): Provider[] {
    return providersOf(this.current.credentials, this.providers);
  }

  /** The provider table under the policy in use: it changes when the policy reloads. */
  get providers(): ProviderTable {
    return providerTableOf(this.current);
  }

  private chosenPath(): string {
    return this.userPath !== null && existsSync(this.userPath) ? this.userPath : this.fallbackPath;
  }

  decide(host: string, port: number, method: string): Decision {
    return decide(this.current, host, port, method);
  }

  decideAddress(address: string, port: number, method?: string): Decision | null {
    return decideAddress(this.current, address, port, method);
  }

  decideName(host: string): Decision {
    return decideName(this.current, host);
  }

  privateAddressesDenied(): boolean {
    return this.current.privateAddresses === 'deny';
  }

  howToAllowPrivate(host: string, port: number): string {
    return privateDestinationAdvice(host, port, { inUse: this.inUse, editable: this.userPath ?? this.fallbackPath });
  }

  /** Re-reads the policy (from CAPSEM_HOME/policy.json if it now exists); a broken edit keeps the previous policy and is reported in lastError. */
  reload(): boolean {
    const path = this.chosenPath();
    try {
      this.current = parsePolicy(readFileSync(path, 'utf8'), path);
      this.inUse = path;
      this.generation += 1;
      this.lastError = null;
      return true;
    } catch (err) {
      this.lastError = (err as Error).message;
      return false;
    }
  }

  /** Polls the files (robust to editors that replace them by rename) and reloads on change. */
  watch(intervalMs = 500): () => void {
    const onChange = (): void => void this.reload();
    const paths = [...new Set([this.fallbackPath, this.userPath ?? this.fallbackPath])];
    for (const path of paths) watchFile(path, { interval: intervalMs, persistent: false }, onChange);
    return () => {
      for (const path of paths) unwatchFile(path, onChange);
    };
  }
}
