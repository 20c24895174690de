import type { StartProgress } from '../../electron/contract/appContract.ts';
import { stageDuration, stageLabel, type BuildStage } from '../../electron/contract/buildStages.ts';

const percent = (fraction: number): string => `${Math.round(fraction * 100)}%`;

/**
 * What a start under way is doing, e.g. "building the image: downloading packages 42% · coding
 * agents 10%" (every stage running, side by side) or "booting the VM (TCG: …)".
 */
export function startLabel(progress: StartProgress): string {
  if (progress.phase !== 'image') return progress.message;
  const running = progress.build.filter((s) => s.state === 'running');
  if (running.length > 0) return `building the image: ${running.map((s) => `${stageLabel(s.stage)} ${percent(s.fraction)}`).join(' · ')}`;
  return `building the image: ${stageLabel(progress.step)}${progress.fraction === null ? '' : ` ${percent(progress.fraction)}`}`;
}

const MARKS: Record<BuildStage['state'], string> = { done: '✓', skipped: '–', running: '▸', pending: '·' };

/** What a stage shows beside its name: its time once done, its percent while running. */
function stageFigure(stage: BuildStage): string {
  if (stage.state === 'done') return stageDuration(stage.ms);
  if (stage.state === 'skipped') return 'skipped';
  return stage.state === 'running' ? percent(stage.fraction) : '';
}

/** One stage of the build: done with its time, skipped, running with its bar and percent, or still to come. */
function BuildStageItem({ stage }: { readonly stage: BuildStage }) {
  return (
    <li className="build-stage" data-testid="build-stage" data-stage={stage.stage} data-state={stage.state}>
      <span className="build-stage-mark" aria-hidden>
        {MARKS[stage.state]}
      </span>
      <span className="build-stage-label">{stageLabel(stage.stage)}</span>
      {stage.state === 'running' && <progress max={1} value={stage.fraction} aria-label={`${stageLabel(stage.stage)} progress`} />}
      <span className="muted build-stage-figure">{stageFigure(stage)}</span>
    </li>
  );
}

/**
 * A session's start while it is under way, in its row and its tab: the stage with a bar (the
 * image build's share done; an indeterminate bar while the VM boots) and, in full, the build's
 * own line and every stage of the build with its state.
 */
export function StartingNote({ progress, detail = false }: { readonly progress: StartProgress; readonly detail?: boolean }) {
  const label = startLabel(progress);
  const showStages = detail && progress.phase === 'image' && progress.build.length > 0;
  return (
    <span
      className={showStages ? 'starting starting-stages' : 'starting'}
      data-testid="start-progress"
      data-phase={progress.phase}
      data-step={progress.step}
      title={progress.message}
    >
      <progress max={1} value={progress.fraction ?? undefined} aria-label="start progress" />
      <span className="starting-label">{label}</span>
      {detail && progress.phase === 'image' && <span className="muted starting-detail">{progress.message}</span>}
      {showStages && (
        <ol className="build-stages" data-testid="build-stages" aria-label="image build stages">
          {progress.build.map((stage) => (
            <BuildStageItem key={stage.stage} stage={stage} />
          ))}
        </ol>
      )}
    </span>
  );
}
