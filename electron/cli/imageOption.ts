import { DEFAULT_IMAGE_KIND, GUEST_IMAGES, IMAGE_KINDS, ImageKindSchema, orList, type ImageKind } from '../contract/guestImages.ts';
import { UsageError } from './context.ts';

// --image KIND, shared by capsem run and capsem shell: the kinds, their help lines and the error
// all come from the list of guest images (electron/contract/guestImages.ts).

export const IMAGE_OPTION = { image: { type: 'string' } } as const;

/** `[--image agent|minimal]`, for a usage line. */
export const IMAGE_SYNOPSIS = `[--image ${IMAGE_KINDS.join('|')}]`;

/** The option's help: one line per kind, in the list's order. */
export const IMAGE_USAGE = GUEST_IMAGES.map((image, i) => {
  const lead = i === 0 ? '  --image KIND     ' : ' '.repeat(19);
  return `${lead}${image.id}${image.id === DEFAULT_IMAGE_KIND ? ' (default)' : ''}: ${image.summary}`;
}).join('\n');

/** The kind --image names, the default without it; any other value is a usage error that lists the kinds. */
export function imageOption(value: unknown): ImageKind {
  if (value === undefined) return DEFAULT_IMAGE_KIND;
  const parsed = ImageKindSchema.safeParse(value);
  if (!parsed.success) throw new UsageError(`--image takes ${orList(IMAGE_KINDS)}, not "${String(value)}"`);
  return parsed.data;
}
