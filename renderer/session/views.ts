import type { SessionSummary, TableKind } from '../../electron/contract/appContract.ts';

/** The views a session tab offers, in switcher order; table views name their contract kind. */
export const VIEWS = [
  { view: 'terminal', label: 'Terminal', kind: null },
  { view: 'conversation', label: 'Conversation', kind: null },
  { view: 'network', label: 'Network', kind: 'net' },
  { view: 'models', label: 'Model calls', kind: 'model' },
  { view: 'tools', label: 'Tools', kind: 'tool' },
  { view: 'files', label: 'Files', kind: 'file' },
  { view: 'exec', label: 'Exec', kind: 'exec' },
  { view: 'timeline', label: 'Timeline', kind: null },
  { view: 'cost', label: 'Cost', kind: null },
] as const satisfies readonly { view: string; label: string; kind: TableKind | null }[];

export type View = (typeof VIEWS)[number]['view'];

export function viewOfKind(kind: TableKind): View {
  return VIEWS.find((v) => v.kind === kind)?.view ?? 'network';
}

/**
 * The view a tab opens on: a session that runs (or is starting) on its terminal; an ended one on
 * what it recorded, the agent's story when it called a model, else its network.
 */
export function firstView(session: Pick<SessionSummary, 'status' | 'onDisk' | 'modelCalls'> | null): View {
  if (!session || session.status === 'running' || !session.onDisk) return 'terminal';
  return session.modelCalls > 0 ? 'conversation' : 'network';
}
