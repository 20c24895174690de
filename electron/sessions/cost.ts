import type { Cost } from '../contract/appContract.ts';
import type { OpenSession } from './sessionStores.ts';

// sessions.cost: spend by provider and model, with the prompt-cache tokens the usage details
// record, and the running total after each model call for the cost-over-time chart. A call with
// tokens and no cost is one the recorder could not price: counted apart, so the window says so
// instead of showing $0.00.

const cache = (key: string): string =>
  `coalesce(sum(CASE WHEN json_valid(usage_details) THEN json_extract(usage_details, '$.${key}') END), 0)`;

export function sessionCost(session: OpenSession): Cost {
  if (!session.tables().has('model_calls')) return { byModel: [], cumulative: [] };
  const db = session.store.db;
  const byModel = db
    .prepare(
      `SELECT provider, coalesce(model, '') AS model, count(*) AS calls, coalesce(sum(input_tokens), 0) AS inputTokens,
              coalesce(sum(output_tokens), 0) AS outputTokens, ${cache('cache_read')} AS cacheReadTokens,
              ${cache('cache_write')} AS cacheWriteTokens, coalesce(sum(estimated_cost_usd), 0) AS costUsd,
              count(CASE WHEN coalesce(estimated_cost_usd, 0) = 0 AND coalesce(input_tokens, 0) + coalesce(output_tokens, 0) > 0 THEN 1 END) AS unpricedCalls
       FROM model_calls GROUP BY provider, coalesce(model, '') ORDER BY costUsd DESC, provider, model`,
    )
    .all() as Cost['byModel'];
  const cumulative: Cost['cumulative'] = [];
  let total = 0;
  for (const row of db
    .prepare('SELECT timestamp AS at, coalesce(estimated_cost_usd, 0) AS cost FROM model_calls ORDER BY seq')
    .iterate() as IterableIterator<{ at: string; cost: number }>) {
    total += row.cost;
    cumulative.push({ at: row.at, costUsd: total });
  }
  return { byModel, cumulative };
}
