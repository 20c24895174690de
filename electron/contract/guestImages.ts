import { z } from 'zod';

// The guest images a session can boot, listed once. The CLI's --image, the owner socket, the app
// contract, the image manifest, capsem doctor and the New session form take their kinds from this
// list and say what each is with its label and summary. How each one is built is its recipe entry
// in electron/vm/image/imageRecipe.ts, keyed by these ids. README.md: "Adding a guest image".

export interface GuestImageKind<Id extends string = string> {
  /** The kind in --image, sessions.start, vm.run and vm.shell, the manifest and the cache folder (`<id>-<hash>`). */
  readonly id: Id;
  /** What people call it: the form's option, doctor's check, the refusals. */
  readonly label: string;
  /** One line on what is in it, for --help and the form. */
  readonly summary: string;
  /** It carries the coding agents (Claude Code, Codex, Gemini CLI) and the Node they run on: only such an image can start one. */
  readonly codingAgents: boolean;
}

export const GUEST_IMAGES = [
  {
    id: 'agent',
    label: 'agent image',
    summary: 'Debian: bash, git, curl, python3, Node 22 and the coding agents',
    codingAgents: true,
  },
  { id: 'minimal', label: 'minimal image', summary: 'busybox only, boots fastest', codingAgents: false },
] as const satisfies readonly GuestImageKind[];

export type ImageKind = (typeof GUEST_IMAGES)[number]['id'];

export const IMAGE_KINDS = GUEST_IMAGES.map((image) => image.id) as readonly ImageKind[] as readonly [ImageKind, ...ImageKind[]];

export const ImageKindSchema = z.enum(IMAGE_KINDS);

/** What a session boots when nobody says: it carries the coding agents, so starting one needs no image named. */
export const DEFAULT_IMAGE_KIND: ImageKind = 'agent';

export function guestImageKind(kind: ImageKind): GuestImageKind<ImageKind> {
  return GUEST_IMAGES.find((image) => image.id === kind)!;
}

/** "a", "a or b", "a, b or c": the kinds (or their labels) as a sentence lists them. */
export function orList(words: readonly string[]): string {
  return words.length <= 1 ? (words[0] ?? '') : `${words.slice(0, -1).join(', ')} or ${words.at(-1)}`;
}

/** The images a coding agent can start on. */
export const CODING_AGENT_IMAGES: readonly GuestImageKind<ImageKind>[] = GUEST_IMAGES.filter((image) => image.codingAgents);

/** Where the coding agents are, for a refusal: "Codex is in the agent image only". */
export const CODING_AGENTS_ARE_IN = `the ${orList(CODING_AGENT_IMAGES.map((image) => image.label))}`;
