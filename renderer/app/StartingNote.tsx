import type { StartProgress } from '../../electron/contract/appContract.ts';

/** What a start under way is doing, e.g. "image: debootstrap 42%" or "booting the VM (TCG: …)". */
export function startLabel(progress: StartProgress): string {
  const percent = progress.fraction === null ? '' : ` ${Math.round(progress.fraction * 100)}%`;
  return progress.phase === 'image' ? `building the image: ${progress.step}${percent}` : progress.message;
}

/**
 * A session's start while it is under way, in its row and its tab: the stage with a bar (the
 * image build's share done; an indeterminate bar while the VM boots) and, in full, the build's
 * own line.
 */
export function StartingNote({ progress, detail = false }: { readonly progress: StartProgress; readonly detail?: boolean }) {
  const label = startLabel(progress);
  return (
    <span className="starting" data-testid="start-progress" data-phase={progress.phase} data-step={progress.step} title={progress.message}>
      <progress max={1} value={progress.fraction ?? undefined} aria-label="start progress" />
      <span className="starting-label">{label}</span>
      {detail && progress.phase === 'image' && <span className="muted starting-detail">{progress.message}</span>}
    </span>
  );
}
