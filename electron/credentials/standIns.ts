import { randomBytes } from 'node:crypto';
import type { StandInShape } from './providers.ts';

// A stand-in looks like the provider's key (prefix, length, alphabet) so an agent's own check on
// the key's format passes, but is drawn fresh from the system's random source for each session:
// nothing about the real key can be learnt from it.

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

export function newStandIn(shape: StandInShape): string {
  // 64 symbols: one byte's low six bits pick one with no bias.
  const bytes = randomBytes(shape.randomChars);
  let random = '';
  for (const byte of bytes) random += ALPHABET[byte & 63];
  return `${shape.prefix}${random}${shape.suffix}`;
}
