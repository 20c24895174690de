import { findProvider } from '@pydantic/genai-prices';
import { z } from 'zod';
import { hostName, keyPorts } from '../credentials/providers.ts';
import { BUILT_IN_PROVIDERS, ProviderTable } from '../telemetry/providers/index.ts';
import { DEFAULT_PORTS, endpointsAt, LOCAL_PRICE, UNPRICED, type ModelProvider } from '../telemetry/providers/provider.ts';
import { WIRE_FORMATS } from '../telemetry/wire/index.ts';

// The policy file's `providers`: model providers Capsem does not ship, or a built-in one declared
// again (same id) to change it. Each is recorded under its id, priced as it says, and its key, when
// it names one, brokered as a built-in provider's is. They join the built-in table after it, a
// redeclared one in its built-in's place.

const WIRE_IDS = WIRE_FORMATS.map((w) => w.id);

const wireId = z.string().refine((id) => WIRE_IDS.includes(id), { message: `a wire format: one of ${WIRE_IDS.join(', ')}` });

const price = z.string().refine((id) => id === LOCAL_PRICE || id === UNPRICED || findProvider({ providerId: id })?.id === id, {
  message: `a genai-prices provider id (such as mistral, groq or openai), "${LOCAL_PRICE}" (runs locally, costs nothing) or "${UNPRICED}"`,
});

const providerKey = z
  .object({
    env: z.string().regex(/^[A-Z_][A-Z0-9_]*$/, 'an environment variable name, such as ACME_API_KEY'),
    header: z
      .string()
      .regex(/^[a-z0-9-]+$/i, 'a header name, such as authorization or x-api-key')
      .transform((h) => h.toLowerCase())
      .default('authorization'),
    /** Whether the header's value is `Bearer KEY`: so for authorization unless said otherwise. */
    bearer: z.boolean().optional(),
    query: z.string().min(1).optional(),
    standInPrefix: z
      .string()
      .regex(/^[A-Za-z0-9_-]{0,32}$/, 'up to 32 letters, digits, dashes and underscores')
      .default(''),
  })
  .strict()
  .transform((k) => ({ ...k, bearer: k.bearer ?? k.header === 'authorization' }));

const policyProvider = z
  .object({
    id: z.string().regex(/^[a-z][a-z0-9-]{0,31}$/, 'lowercase letters, digits and dashes, starting with a letter'),
    label: z.string().min(1).optional(),
    hosts: z.array(hostName).min(1, 'at least one host'),
    ports: keyPorts.optional(),
    wire: z.union([wireId, z.array(wireId).min(1)]).default('openai-chat'),
    basePath: z
      .string()
      .regex(/^(\/[A-Za-z0-9._~-]+)*$/, 'empty, or a path such as /api/v1 that starts with / and does not end with one')
      .default(''),
    price: price.default(UNPRICED),
    key: providerKey.optional(),
  })
  .strict();

/** The `providers` section of the policy file. */
export const providersSettings = z
  .array(policyProvider)
  .superRefine((providers, ctx) => {
    const seen = new Set<string>();
    providers.forEach((p, i) => {
      if (seen.has(p.id)) ctx.addIssue({ code: 'custom', path: [i, 'id'], message: `"${p.id}" is named twice` });
      seen.add(p.id);
    });
  })
  .default([]);

export type PolicyProvider = z.infer<typeof policyProvider>;

/** A policy entry as a provider of the table; one that redeclares a built-in keeps that one's key name (the key store's). */
export function providerOf(entry: PolicyProvider): ModelProvider {
  const keyName = BUILT_IN_PROVIDERS.find((p) => p.id === entry.id)?.key?.name ?? entry.id;
  return {
    id: entry.id,
    label: entry.label ?? entry.id,
    hosts: entry.hosts,
    ports: entry.ports ?? DEFAULT_PORTS,
    endpoints: endpointsAt(entry.basePath, typeof entry.wire === 'string' ? [entry.wire] : entry.wire),
    price: entry.price,
    key: entry.key
      ? {
          name: keyName,
          env: [entry.key.env],
          headers: [{ name: entry.key.header, bearer: entry.key.bearer }],
          query: entry.key.query ?? null,
          standIn: { prefix: entry.key.standInPrefix, randomChars: 48, suffix: '' },
        }
      : null,
  };
}

/** The built-in providers with the policy's: an entry with a built-in's id takes its place, the others follow. */
export function tableWith(entries: readonly PolicyProvider[]): ProviderTable {
  const declared = new Map(entries.map((entry) => [entry.id, providerOf(entry)]));
  const builtIn = BUILT_IN_PROVIDERS.map((p) => declared.get(p.id) ?? p);
  return new ProviderTable([...builtIn, ...[...declared.values()].filter((p) => !BUILT_IN_PROVIDERS.some((b) => b.id === p.id))]);
}
