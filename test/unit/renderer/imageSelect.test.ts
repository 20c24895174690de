import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { GUEST_IMAGES } from '../../../electron/contract/guestImages.ts';
import { ImageSelect, imageFor } from '../../../renderer/sessions/ImageSelect.tsx';

// New session's image select lists the guest images from the contract's list, and a coding agent
// only those that carry the coding agents.

/** [value, title, label] of each option, and the selected one's value. */
const options = (markup: string) =>
  [...markup.matchAll(/<option ([^>]*)>([^<]+)<\/option>/g)].map(([, attributes, label]) => [
    /value="([^"]+)"/.exec(attributes!)?.[1],
    /title="([^"]+)"/.exec(attributes!)?.[1],
    label,
  ]);
const selected = (markup: string) => /<option [^>]*value="([^"]+)"[^>]*selected/.exec(markup)?.[1];

describe('the image select', () => {
  it('offers every image in the list, in order, with its label and summary, under a shell', () => {
    const markup = renderToStaticMarkup(createElement(ImageSelect, { terminal: 'shell', value: 'minimal', onChange: () => {} }));
    expect(options(markup)).toEqual(GUEST_IMAGES.map((image) => [image.id, image.summary, image.label]));
    expect(markup).not.toContain('disabled');
    expect(selected(markup)).toBe('minimal');
    expect(imageFor('shell', 'minimal')).toBe('minimal');
  });

  it('offers a coding agent only the images that carry it, and boots one of them', () => {
    const markup = renderToStaticMarkup(createElement(ImageSelect, { terminal: 'claude', value: 'minimal', onChange: () => {} }));
    expect(options(markup).map(([id]) => id)).toEqual(GUEST_IMAGES.filter((image) => image.codingAgents).map((image) => image.id));
    expect(markup).toContain('disabled');
    expect(selected(markup)).toBe('agent');
    expect(markup).toContain('title="the coding agents are in the agent image"');
    expect(imageFor('claude', 'minimal')).toBe('agent');
  });
});
