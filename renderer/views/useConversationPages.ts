import { useCallback, useEffect, useReducer, useRef, useState } from 'react';
import type { ConversationPage, ConversationTurn } from '../../electron/contract/appContract.ts';
import { useApi, useConnectionEpoch } from '../api/ApiContext.tsx';
import { errorText } from '../api/callError.ts';

/** Turns per sessions.conversation call: a few screenfuls, quick to answer and to paint. */
export const TURN_PAGE = 30;
/** Pages kept in memory; the farthest from the viewport go first. */
const MAX_PAGES = 60;

export interface ConversationPages {
  /** Turns in the whole Conversation, or null until the first page answers. */
  readonly total: number | null;
  readonly agents: ConversationPage['agents'];
  readonly error: string | null;
  /** Moves each time a page arrives. */
  readonly loads: number;
  turnAt(index: number): ConversationTurn | undefined;
  /** Loads the pages covering turns first..last that are missing, or stale since new rows landed. */
  ensure(first: number, last: number): void;
}

/**
 * The Conversation a page of turns at a time around the viewport. A live session's new rows can
 * add turns anywhere (a subagent's go under the call that spawned it) and complete earlier ones
 * (a result sent back), so each live bump marks every page stale: the ones in view are read
 * again at once, the rest when they come back into view, and the stale copy shows meanwhile.
 */
export function useConversationPages(sessionId: string, liveVersion: number): ConversationPages {
  const api = useApi();
  const epoch = useConnectionEpoch();
  const pages = useRef(new Map<number, ConversationTurn[]>());
  const stale = useRef(new Set<number>());
  const loading = useRef(new Set<number>());
  const generation = useRef(0);
  const shown = useRef<{ first: number; last: number }>({ first: 0, last: 0 });
  const [total, setTotal] = useState<number | null>(null);
  const [agents, setAgents] = useState<ConversationPage['agents']>([]);
  const [error, setError] = useState<string | null>(null);
  const [loads, rerender] = useReducer((n: number) => n + 1, 0);

  const load = useCallback(
    (page: number) => {
      if (loading.current.has(page) || (pages.current.has(page) && !stale.current.has(page))) return;
      loading.current.add(page);
      const gen = generation.current;
      api.call('sessions.conversation', { id: sessionId, offset: page * TURN_PAGE, limit: TURN_PAGE }).then(
        (result) => {
          if (gen !== generation.current) return;
          loading.current.delete(page);
          stale.current.delete(page);
          pages.current.set(page, result.turns);
          setTotal(result.total);
          setAgents(result.agents);
          setError(null);
          rerender();
        },
        (e: unknown) => {
          if (gen !== generation.current) return;
          loading.current.delete(page);
          setError(errorText(e));
        },
      );
    },
    [api, sessionId],
  );

  const ensure = useCallback(
    (first: number, last: number) => {
      shown.current = { first, last };
      const from = Math.floor(Math.max(0, first) / TURN_PAGE);
      const to = Math.floor(Math.max(0, last) / TURN_PAGE);
      for (let page = from; page <= to; page++) load(page);
      if (pages.current.size > MAX_PAGES) {
        const middle = (from + to) / 2;
        const farthest = [...pages.current.keys()].sort((a, b) => Math.abs(b - middle) - Math.abs(a - middle));
        for (const page of farthest.slice(0, pages.current.size - MAX_PAGES)) pages.current.delete(page);
      }
    },
    [load],
  );

  useEffect(() => {
    generation.current += 1;
    pages.current.clear();
    stale.current.clear();
    loading.current.clear();
    setTotal(null);
    if (epoch > 0) load(0);
  }, [load, epoch]);

  const seenLive = useRef(liveVersion);
  useEffect(() => {
    if (seenLive.current === liveVersion) return;
    seenLive.current = liveVersion;
    // An answer already on its way may predate the new rows: ask again once it is back.
    generation.current += 1;
    loading.current.clear();
    for (const page of pages.current.keys()) stale.current.add(page);
    const { first, last } = shown.current;
    ensure(first, last);
    if (!pages.current.has(0)) load(0);
  }, [liveVersion, ensure, load]);

  const turnAt = useCallback((index: number) => pages.current.get(Math.floor(index / TURN_PAGE))?.[index % TURN_PAGE], []);

  return { total, agents, error, loads, turnAt, ensure };
}
