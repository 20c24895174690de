import { randomBytes } from 'node:crypto';
import type { StandInShape } from '../telemetry/providers/provider.ts';

// A stand-in looks like the provider's key (prefix, suffix, alphabet) so an agent's own check on
// the key's format passes, but is drawn fresh from the system's random source for each session:
// nothing about the real key can be learnt from it but its length. It is exactly as long as the key
// (in bytes), so a reflected key swapped for it leaves every length the response declared true
// (Content-Length, WebSocket frames, HTTP/2 frames).

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** Random characters a stand-in keeps at the least (96 bits), dropping the shape's suffix, then its prefix, to keep them. */
const FEWEST_RANDOM = 16;

function randomChars(count: number): string {
  // 64 symbols: one byte's low six bits pick one with no bias.
  let random = '';
  for (const byte of randomBytes(count)) random += ALPHABET[byte & 63];
  return random;
}

/**
 * A stand-in of `keyBytes` bytes in the provider's shape. A key shorter than FEWEST_RANDOM bytes
 * (no provider's) gets the shape's own length instead: the proxy then replaces a reflected key with a
 * stand-in of another length and drops the lengths it can no longer vouch for.
 */
export function newStandIn(shape: StandInShape, keyBytes: number): string {
  const { prefix, suffix } = shape;
  if (keyBytes >= prefix.length + suffix.length + FEWEST_RANDOM)
    return `${prefix}${randomChars(keyBytes - prefix.length - suffix.length)}${suffix}`;
  if (keyBytes >= prefix.length + FEWEST_RANDOM) return `${prefix}${randomChars(keyBytes - prefix.length)}`;
  if (keyBytes >= FEWEST_RANDOM) return randomChars(keyBytes);
  return `${prefix}${randomChars(shape.randomChars)}${suffix}`;
}
