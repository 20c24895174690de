import type { EventClient } from '../contract/sessionEvent.ts';

// The event's `client`: the program that made the request, read from its User-Agent as Cortex's
// pipeline.ParseUserAgent reads it, so a client decoding into Cortex's EventClient gets the same
// object from us as from Cortex's own server. The User-Agent is whatever the program (or an
// imported session.db) says: a label for display, never a name anything is decided on.

/** Cortex's maxClientLen: the most of a User-Agent kept, in UTF-8 bytes. */
export const MAX_CLIENT_BYTES = 128;

/**
 * The coding agents we know, by the product token (the User-Agent's first word, before its slash):
 * OpenCode sends `opencode/<version>`; the tokens for IBM Bob and Pi are the products' names.
 */
const KNOWN_CLIENTS: readonly (readonly [RegExp, string])[] = [
  [/^claude-(cli|code)$/i, 'claude-code'],
  [/^codex[\w-]*$/i, 'codex'],
  [/^(geminicli|gemini-cli)$/i, 'gemini-cli'],
  [/^(ibm-)?bob(-?(cli|shell))?$/i, 'bob'],
  [/^opencode$/i, 'opencode'],
  [/^pi(-coding-agent)?$/i, 'pi'],
];

/**
 * What would rewrite or hide the text around it where the label is shown: C0, DEL and C1 controls
 * (U+009B alone opens a terminal escape), bidi overrides and isolates, zero-width characters, and
 * a lone surrogate (no character at all). Cortex's isControlRune, the same members.
 */
const HIDING =
  /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069\u200b-\u200d\u2060\ufeff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** Cut to MAX_CLIENT_BYTES of UTF-8 without splitting a character. */
function capped(text: string): string {
  if (Buffer.byteLength(text) <= MAX_CLIENT_BYTES) return text;
  let bytes = 0;
  let end = 0;
  for (const char of text) {
    bytes += Buffer.byteLength(char);
    if (bytes > MAX_CLIENT_BYTES) break;
    end += char.length;
  }
  return text.slice(0, end);
}

/**
 * The client a User-Agent names: undefined when none was sent (absence, not a client called
 * "unknown"); `raw` alone when it names no agent we know, so a new agent still shows under what it
 * sent. Hiding characters become U+FFFD before anything is matched or kept, then the whole is capped.
 */
export function clientOfUserAgent(userAgent: string | undefined): EventClient | undefined {
  const trimmed = userAgent?.trim();
  if (!trimmed) return undefined;
  const raw = capped(trimmed.replace(HIDING, '\ufffd'));
  const token = raw.split(/[ \t]/, 1)[0]!;
  const slash = token.indexOf('/');
  const product = slash < 0 ? token : token.slice(0, slash);
  const name = KNOWN_CLIENTS.find(([pattern]) => pattern.test(product))?.[1];
  if (name === undefined) return { raw };
  const version = slash < 0 ? '' : token.slice(slash + 1);
  return version === '' ? { name, raw } : { name, version, raw };
}
