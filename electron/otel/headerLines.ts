// Headers typed into Settings → Export, one `key=value` a line (an API key, say). The rules are
// parseOtlpHeaders' (keys lower-cased, a pair without `=` is a mistake) minus its URL-decoding: a
// value pasted from a backend's page is taken as it is. What fetch would refuse at send time is
// refused here, when it can still be said beside the field.

/** An HTTP field name (RFC 9110 token). */
const NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** What fetch takes in a value: tab, visible ASCII, Latin-1 (no line breaks, no other controls). */
const VALUE = /^[\t\x20-\x7e\x80-\xff]+$/;

export function parseHeaderLines(text: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [i, raw] of text.split(/\r?\n/).entries()) {
    const line = raw.trim();
    if (line.length === 0) continue;
    const at = `header line ${i + 1}`;
    const eq = line.indexOf('=');
    if (eq < 0) throw new Error(`${at} is not key=value`);
    const name = line.slice(0, eq).trim().toLowerCase();
    const value = line.slice(eq + 1).trim();
    if (!NAME.test(name)) throw new Error(`${at}: "${name}" is not a header name (letters, digits and - _ . and the like, no spaces)`);
    // The value is a secret: never echoed back, not even in an error.
    if (value.length === 0) throw new Error(`${at}: ${name} has no value`);
    if (!VALUE.test(value)) throw new Error(`${at}: the value of ${name} holds a character a header cannot carry`);
    headers[name] = value;
  }
  return headers;
}
