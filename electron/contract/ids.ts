// Two brands so the compiler refuses to pass a display name where a session id belongs: the bug
// this prevents (a route keyed by name serving another session's rows) is the one the spec names.
declare const sessionIdBrand: unique symbol;
declare const displayNameBrand: unique symbol;
export type SessionId = string & { readonly [sessionIdBrand]: true };
export type DisplayName = string & { readonly [displayNameBrand]: true };

/**
 * How many characters of an id people are shown (the window's lists and tabs), and so the fewest
 * that resolve to a session wherever one is typed.
 */
export const SHORT_ID_LENGTH = 8;

/** A session id's shape: a lowercase UUID. */
export const SESSION_ID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const DISPLAY_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

export class IdentityError extends Error {
  override name = 'IdentityError';
}

export function isSessionId(value: string): value is SessionId {
  return SESSION_ID_PATTERN.test(value);
}

/** The one way a string becomes a SessionId; a display name is refused with a hint to resolve it. */
export function asSessionId(value: string): SessionId {
  if (isSessionId(value)) return value;
  if (DISPLAY_NAME.test(value)) {
    throw new IdentityError(`"${value}" is a display name, not a session id; resolve the name first`);
  }
  throw new IdentityError(`"${value}" is not a session id (expected a lowercase UUID)`);
}

/**
 * A name may not look like a session id: the resolver tries ids first, so such a name could
 * never be reached, and a person reading a list could not tell the two apart.
 */
export function asDisplayName(value: string): DisplayName {
  if (!DISPLAY_NAME.test(value)) {
    throw new IdentityError(`invalid session name "${value}": use 1-64 letters, digits, "_" or "-", starting with a letter or digit`);
  }
  if (isSessionId(value.toLowerCase())) {
    throw new IdentityError(`invalid session name "${value}": a name may not look like a session id`);
  }
  return value as DisplayName;
}
