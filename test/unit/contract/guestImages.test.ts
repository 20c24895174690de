import { describe, expect, it } from 'vitest';
import { CALLS } from '../../../electron/contract/appContract.ts';
import {
  CODING_AGENTS_ARE_IN,
  DEFAULT_IMAGE_KIND,
  GUEST_IMAGES,
  guestImageKind,
  IMAGE_KINDS,
  ImageKindSchema,
  orList,
} from '../../../electron/contract/guestImages.ts';
import { VmRunParams, VmShellParams } from '../../../electron/owner/vmMethods.ts';

// The list of guest images is the one place a kind is declared: the app contract's and the owner
// socket's schemas take exactly its kinds.

describe('the list of guest images', () => {
  it('gives each kind one entry, worded for people, and a default that can start the coding agents', () => {
    const ids = GUEST_IMAGES.map((image) => image.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ImageKindSchema.options).toEqual(ids);
    expect(IMAGE_KINDS).toEqual(ids);
    for (const image of GUEST_IMAGES) {
      expect(image.label, image.id).toMatch(/\S/);
      expect(image.summary, image.id).not.toMatch(/\n/);
      expect(guestImageKind(image.id)).toBe(image);
    }
    // `capsem run --agent` and the form's coding agents boot it when no image is named.
    expect(guestImageKind(DEFAULT_IMAGE_KIND).codingAgents).toBe(true);
    for (const image of GUEST_IMAGES) expect(CODING_AGENTS_ARE_IN.includes(image.label), image.id).toBe(image.codingAgents);
  });

  it('words a list as a sentence does', () => {
    expect(orList([])).toBe('');
    expect(orList(['agent'])).toBe('agent');
    expect(orList(['agent', 'minimal'])).toBe('agent or minimal');
    expect(orList(['agent', 'minimal', 'python'])).toBe('agent, minimal or python');
  });

  it('is what sessions.start, vm.run and vm.shell accept, and nothing else', () => {
    const start = CALLS['sessions.start'].params;
    for (const kind of IMAGE_KINDS) {
      expect(start.parse({ name: null, image: kind }).image).toBe(kind);
      expect(VmRunParams.parse({ image: kind, argv: ['true'] }).image).toBe(kind);
      expect(VmShellParams.parse({ image: kind }).image).toBe(kind);
    }
    expect(start.safeParse({ name: null, image: 'debian' }).success).toBe(false);
    expect(VmRunParams.safeParse({ image: 'debian', argv: ['true'] }).success).toBe(false);
    expect(VmRunParams.parse({ argv: ['true'] }).image).toBe(DEFAULT_IMAGE_KIND);
    expect(VmShellParams.parse({}).image).toBe(DEFAULT_IMAGE_KIND);
  });
});
