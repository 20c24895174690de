import { useCallback } from 'react';
import type { TableKind, TableRow } from '../../electron/contract/appContract.ts';
import { useApi } from '../api/ApiContext.tsx';
import { usePagedList, type PagedList } from './usePagedList.ts';

export type PagedRows = PagedList<TableRow>;

/** A table view's rows (events.page), a page at a time around the viewport; `filter` narrows them. */
export function usePagedRows(sessionId: string, kind: TableKind, filter: string, liveVersion: number): PagedRows {
  const api = useApi();
  const loader = useCallback(
    (offset: number, limit: number) => api.call('events.page', { id: sessionId, kind, offset, limit, ...(filter ? { filter } : {}) }),
    [api, sessionId, kind, filter],
  );
  return usePagedList(loader, liveVersion);
}
