import { useCallback, useState } from 'react';
import type { WorkspaceChange, WorkspaceChangePage } from '../../../electron/contract/appContract.ts';
import { useApi } from '../../api/ApiContext.tsx';
import { usePagedList, type PagedList } from '../../session/usePagedList.ts';

export interface ChangeQuery {
  readonly turn: number | null;
  readonly path: string | null;
}

export interface ChangePages extends PagedList<WorkspaceChange> {
  readonly baseline: WorkspaceChangePage['baseline'] | undefined;
}

/**
 * The session's workspace changes (sessions.changes), narrowed to a turn or a path, a page at a
 * time around the viewport. `reloads` starts over: a revert writes rows anywhere in the order.
 */
export function useChangePages(sessionId: string, query: ChangeQuery, liveVersion: number, reloads: number): ChangePages {
  const api = useApi();
  const [baseline, setBaseline] = useState<WorkspaceChangePage['baseline'] | undefined>(undefined);
  const loader = useCallback(
    async (offset: number, limit: number) => {
      const page = await api.call('sessions.changes', { id: sessionId, offset, limit, turn: query.turn, path: query.path });
      setBaseline(page.baseline);
      return { rows: page.changes, total: page.total };
    },
    // `reloads` is in the list so a new count makes a new loader, which starts the list over.
    [api, sessionId, query.turn, query.path, reloads],
  );
  return { ...usePagedList(loader, liveVersion), baseline };
}
