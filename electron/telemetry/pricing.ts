import { calcPrice } from '@pydantic/genai-prices';
import { BUILT_IN_TABLE } from './providers/index.ts';
import { LOCAL_PRICE, UNPRICED } from './providers/provider.ts';

// Cost from the bundled pydantic/genai-prices dataset, used offline. Cache reads and writes are
// priced at their own rates. An unknown model costs 0 and says so; `capsem check` reports it.

export interface PricedUsage {
  /** Uncached prompt tokens. */
  readonly inputTokens?: number;
  readonly outputTokens?: number;
  readonly cacheReadTokens?: number;
  readonly cacheWriteTokens?: number;
}

export interface Price {
  readonly usd: number;
  /** False when the model is not in the pricing data (or is local): the cost is then 0. */
  readonly known: boolean;
}

/** A recorded provider's call priced as the built-in table prices it (a provider unknown there, under its own name in the catalog). */
export function priceOf(provider: string, model: string | undefined, usage: PricedUsage, at = new Date()): Price {
  return priceUnder(BUILT_IN_TABLE.pricingOf(provider), model, usage, at);
}

/** A call priced under a pricing id: a genai-prices provider, LOCAL_PRICE or UNPRICED (both cost 0 here). */
export function priceUnder(pricing: string, model: string | undefined, usage: PricedUsage, at = new Date()): Price {
  if (!model || pricing === LOCAL_PRICE || pricing === UNPRICED) return { usd: 0, known: false };
  const cacheRead = usage.cacheReadTokens ?? 0;
  const cacheWrite = usage.cacheWriteTokens ?? 0;
  try {
    const result = calcPrice(
      {
        // genai-prices counts every prompt token as input and prices the cached ones apart.
        input_tokens: (usage.inputTokens ?? 0) + cacheRead + cacheWrite,
        cache_read_tokens: cacheRead,
        cache_write_tokens: cacheWrite,
        output_tokens: usage.outputTokens ?? 0,
      },
      model,
      { providerId: pricing, timestamp: at },
    );
    return result ? { usd: result.total_price, known: true } : { usd: 0, known: false };
  } catch {
    return { usd: 0, known: false };
  }
}
