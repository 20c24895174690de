import type { ChangeTarget } from '../contract/appContract.ts';
import { ContentStore } from '../changes/contentStore.ts';
import { Conversations } from '../sessions/conversation.ts';
import { SessionStores, type OpenSession } from '../sessions/sessionStores.ts';
import { WorkspaceChanges } from '../sessions/workspaceChanges.ts';
import type { CapsemHome } from '../store/paths.ts';
import type { SessionRecord } from '../store/registry.ts';
import type { SessionId } from '../contract/ids.ts';
import { parseCount, UsageError } from './context.ts';
import { resolveTarget } from './sessionTarget.ts';

// What `capsem diff` and `capsem revert` share: the named session's changes read as the window
// reads them, the content store, and the target their options name.

export interface SessionChanges {
  readonly id: SessionId;
  readonly record: SessionRecord | null;
  readonly session: OpenSession;
  readonly ended: boolean;
  readonly changes: WorkspaceChanges;
  readonly store: ContentStore;
  close(): void;
}

export function openSessionChanges(home: CapsemHome, name: string): SessionChanges {
  const { id, record } = resolveTarget(home, name);
  const stores = new SessionStores(home);
  const session = stores.get(id);
  const store = ContentStore.open(home);
  return {
    id,
    record,
    session,
    ended: record?.status !== 'running',
    changes: new WorkspaceChanges(new Conversations()),
    store,
    close: () => {
      store.close();
      stores.close();
    },
  };
}

/** The target of --turn, --change or paths; the whole session when none is named and `whole` allows it. */
export function targetOf(values: { turn?: string; change?: string }, paths: readonly string[], whole: boolean): ChangeTarget {
  const named = [values.turn !== undefined, values.change !== undefined, paths.length > 0].filter(Boolean).length;
  if (named > 1) throw new UsageError('name one of --turn N, --change ID or paths');
  if (values.turn !== undefined) return { kind: 'turn', turn: parseCount(values.turn, '--turn', 0) };
  if (values.change !== undefined) return { kind: 'change', seq: parseCount(values.change, '--change', 0) };
  if (paths.length > 0) return { kind: 'paths', paths: paths.map((p) => p.replace(/^\.\//, '')) };
  if (!whole) throw new UsageError('name what to revert: --turn N, --change ID or paths');
  return { kind: 'session' };
}
