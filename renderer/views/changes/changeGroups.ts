import type { WorkspaceChange } from '../../../electron/contract/appContract.ts';

// How the Files view names what made a change and where a turn's changes begin. Turns are shown
// numbered from 1, as the Conversation view heads them; the contract counts them from 0.

/** How much of a tool call's preview a label shows: a command's start says which it was. */
const PREVIEW_SHOWN = 48;

/** What made a change, for a person: "Edit in turn 12", "Bash `sed -i s/a/b/ notes.txt` by explore-1 in turn 14", "outside any tool". */
export function sourceLabel(source: WorkspaceChange['source']): string {
  if (source === null) return 'outside any tool';
  const by = source.agent === 'main' ? '' : ` by ${source.agent}`;
  const line = source.preview?.split('\n')[0]?.trim() ?? '';
  const shown = line.length > PREVIEW_SHOWN ? `${line.slice(0, PREVIEW_SHOWN - 1)}…` : line;
  // An Edit's preview is the file the row already names.
  const what = shown && source.toolName.toLowerCase() !== 'edit' && source.toolName.toLowerCase() !== 'write' ? ` \`${shown}\`` : '';
  return `${source.toolName}${what}${by} in turn ${source.turn + 1}`;
}

/** The group a change sits in: its turn's, or the changes made outside any tool. */
function groupKey(change: Pick<WorkspaceChange, 'source'>): string {
  return change.source === null ? 'outside' : `turn:${change.source.turn}`;
}

/**
 * Whether a change opens a group in a list in recording order: the first row, or a change of
 * another turn than the row above. A row whose neighbour is not loaded yet opens one, so a
 * heading shows rather than goes missing while pages arrive.
 */
export function opensGroup(previous: Pick<WorkspaceChange, 'source'> | undefined, change: Pick<WorkspaceChange, 'source'>): boolean {
  return previous === undefined || groupKey(previous) !== groupKey(change);
}

/** What a revert of a target will do, said before the person confirms it. */
export function revertQuestion(
  target: { kind: 'change'; seq: number; path: string } | { kind: 'turn'; turn: number } | { kind: 'paths'; path: string },
): string {
  switch (target.kind) {
    case 'change':
      return `Put ${target.path} back as it was before change #${target.seq}?`;
    case 'turn':
      return `Put every file back as it was before turn ${target.turn + 1}? This takes back the changes of turn ${target.turn + 1} and every turn after it.`;
    case 'paths':
      return `Put ${target.path} back as it was when the session started?`;
  }
}
