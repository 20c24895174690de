import type { SessionSummary } from '../../electron/contract/appContract.ts';
import { shortId } from './format.ts';

/**
 * A tab is keyed by session id and titled by display name. Names are not unique, so when two
 * open tabs share one, both titles carry the short id; an unnamed session is its short id.
 */
export function tabTitles(ids: readonly string[], byId: ReadonlyMap<string, SessionSummary>): Map<string, string> {
  const counts = new Map<string, number>();
  for (const id of ids) {
    const name = byId.get(id)?.name;
    if (name) counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  return new Map(
    ids.map((id) => {
      const name = byId.get(id)?.name;
      if (!name) return [id, shortId(id)];
      return [id, (counts.get(name) ?? 0) > 1 ? `${name} · ${shortId(id)}` : name];
    }),
  );
}
