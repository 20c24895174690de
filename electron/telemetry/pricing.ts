import { calcPrice } from '@pydantic/genai-prices';

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

export function priceOf(provider: string, model: string | undefined, usage: PricedUsage, at = new Date()): Price {
  if (!model || provider === 'ollama') return { usd: 0, known: false };
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
      { providerId: provider, timestamp: at },
    );
    return result ? { usd: result.total_price, known: true } : { usd: 0, known: false };
  } catch {
    return { usd: 0, known: false };
  }
}
