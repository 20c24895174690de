import { useCallback, useEffect, useReducer, useRef, useState } from 'react';
import { useConnectionEpoch } from '../api/ApiContext.tsx';
import { errorText } from '../api/callError.ts';

/** Rows per page call: a screenful or two, small enough that the first paint is quick. */
export const PAGE_SIZE = 200;
/** Pages kept in memory; the farthest from the viewport go first (~50k rows at most). */
const MAX_PAGES = 250;

export interface PagedList<Row> {
  /** Rows matching the query, or null until the first page answers. */
  readonly total: number | null;
  readonly error: string | null;
  rowAt(index: number): Row | undefined;
  /** Loads whatever pages cover rows first..last that are not loaded or loading. */
  ensure(first: number, last: number): void;
  /** The row offset of `seq` in this list, or null if it is not in it. */
  findOffset(seq: number): Promise<number | null>;
}

/** One page of a list ordered by seq, and how many rows the whole list has. */
export type PageLoader<Row> = (offset: number, limit: number) => Promise<{ rows: Row[]; total: number }>;

/**
 * A list of any size, ordered by seq, loaded a page at a time around the viewport: one page
 * costs the first paint of a 100k-row list. New rows append at the end, so a live refresh only
 * re-reads the last page. A new `loader` (another query, session or connection) starts over.
 */
export function usePagedList<Row extends { seq: number }>(loader: PageLoader<Row>, liveVersion: number): PagedList<Row> {
  const epoch = useConnectionEpoch();
  const pages = useRef(new Map<number, Row[]>());
  const loading = useRef(new Set<number>());
  /** Bumped on every reset: answers for an older query or connection are dropped. */
  const generation = useRef(0);
  const totalRef = useRef<number | null>(null);
  const [total, setTotal] = useState<number | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [, rerender] = useReducer((n: number) => n + 1, 0);

  const load = useCallback(
    (page: number, force: boolean) => {
      if (!force && pages.current.has(page)) return;
      if (loading.current.has(page)) return;
      loading.current.add(page);
      const gen = generation.current;
      loader(page * PAGE_SIZE, PAGE_SIZE).then(
        (result) => {
          if (gen !== generation.current) return;
          loading.current.delete(page);
          pages.current.set(page, result.rows);
          totalRef.current = result.total;
          setTotal(result.total);
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
    [loader],
  );

  useEffect(() => {
    generation.current += 1;
    pages.current.clear();
    loading.current.clear();
    totalRef.current = null;
    setTotal(null);
    if (epoch > 0) load(0, true);
  }, [load, epoch]);

  // New rows landed: re-read the page holding the current end; pages past it load on demand.
  const seenLive = useRef(liveVersion);
  useEffect(() => {
    if (seenLive.current === liveVersion) return;
    seenLive.current = liveVersion;
    const known = totalRef.current;
    load(known ? Math.floor(Math.max(0, known - 1) / PAGE_SIZE) : 0, true);
  }, [liveVersion, load]);

  const ensure = useCallback(
    (first: number, last: number) => {
      const from = Math.floor(Math.max(0, first) / PAGE_SIZE);
      const to = Math.floor(Math.max(0, last) / PAGE_SIZE);
      for (let page = from; page <= to; page++) load(page, false);
      if (pages.current.size > MAX_PAGES) {
        const middle = (from + to) / 2;
        const farthest = [...pages.current.keys()].sort((a, b) => Math.abs(b - middle) - Math.abs(a - middle));
        for (const page of farthest.slice(0, pages.current.size - MAX_PAGES)) pages.current.delete(page);
      }
    },
    [load],
  );

  const rowAt = useCallback((index: number) => pages.current.get(Math.floor(index / PAGE_SIZE))?.[index % PAGE_SIZE], []);

  const findOffset = useCallback(
    async (seq: number): Promise<number | null> => {
      for (const [page, rows] of pages.current) {
        const at = rows.findIndex((r) => r.seq === seq);
        if (at >= 0) return page * PAGE_SIZE + at;
      }
      // Rows are in seq order: a binary search costs ~17 one-row reads for 100k rows. The total is
      // asked for when no page of this query has answered yet (a query changed just before).
      let lo = 0;
      let hi = (totalRef.current ?? (await loader(0, 1)).total) - 1;
      while (lo <= hi) {
        const mid = (lo + hi) >> 1;
        const found = (await loader(mid, 1)).rows[0]?.seq;
        if (found === undefined) return null;
        if (found === seq) return mid;
        if (found < seq) lo = mid + 1;
        else hi = mid - 1;
      }
      return null;
    },
    [loader],
  );

  return { total, error, rowAt, ensure, findOffset };
}
