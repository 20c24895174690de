import type { TerminalChoice } from '../../electron/contract/appContract.ts';
import {
  CODING_AGENT_IMAGES,
  CODING_AGENTS_ARE_IN,
  GUEST_IMAGES,
  ImageKindSchema,
  type GuestImageKind,
  type ImageKind,
} from '../../electron/contract/guestImages.ts';

/** The images a new session can boot: any under a shell, only those carrying the coding agents under an agent. */
export function imageChoices(terminal: TerminalChoice): readonly GuestImageKind<ImageKind>[] {
  return terminal === 'shell' ? GUEST_IMAGES : CODING_AGENT_IMAGES;
}

/** The image the session boots: the one chosen when its terminal allows it, else the first that does. */
export function imageFor(terminal: TerminalChoice, chosen: ImageKind): ImageKind {
  const choices = imageChoices(terminal);
  return choices.some((image) => image.id === chosen) ? chosen : choices[0]!.id;
}

/** New session's image select, its options from the list of guest images. */
export function ImageSelect({
  terminal,
  value,
  onChange,
}: {
  readonly terminal: TerminalChoice;
  readonly value: ImageKind;
  readonly onChange: (kind: ImageKind) => void;
}) {
  const choices = imageChoices(terminal);
  return (
    <select
      data-testid="new-session-image"
      value={imageFor(terminal, value)}
      disabled={choices.length < 2}
      title={terminal === 'shell' ? undefined : `the coding agents are in ${CODING_AGENTS_ARE_IN}`}
      onChange={(e) => {
        const kind = ImageKindSchema.safeParse(e.target.value);
        if (kind.success) onChange(kind.data);
      }}
    >
      {choices.map((image) => (
        <option key={image.id} value={image.id} title={image.summary}>
          {image.label}
        </option>
      ))}
    </select>
  );
}
