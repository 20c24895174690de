// The stages of a guest image build as the window and the CLI show them: each with its state, its
// own share done and its time, so parallel stages (the package download beside the coding agents'
// install) are seen side by side. The builder (electron/vm/image/buildProgress.ts) names stages by
// its own ids; LABELS is what people read. No zod here: the renderer imports these values (the
// schema is appContract's BuildStageSchema).

/** `skipped`: finished without running, as a root file system reused from an earlier build. */
export const BUILD_STAGE_STATES = ['pending', 'running', 'done', 'skipped'] as const;
export type BuildStageState = (typeof BUILD_STAGE_STATES)[number];

export interface BuildStage {
  readonly stage: string;
  readonly state: BuildStageState;
  /** The stage's own share done, 0..1. */
  readonly fraction: number;
  /** Milliseconds the stage ran: so far while running, in all once done; 0 while pending or skipped. */
  readonly ms: number;
}

const LABELS: Readonly<Record<string, string>> = {
  inputs: 'hashing inputs',
  kernel: 'kernel',
  download: 'downloading packages',
  debootstrap: 'root file system',
  agents: 'coding agents',
  squashfs: 'compressing the root',
  agentsSquashfs: 'compressing the agents',
  initramfs: 'initramfs',
  manifest: 'manifest',
};

/** What people call a build stage; a stage this version does not know keeps its id. */
export function stageLabel(stage: string): string {
  return LABELS[stage] ?? stage;
}

/** "1m12s", "8.4s": a stage's time, short. */
export function stageDuration(ms: number): string {
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}
