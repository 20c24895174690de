// Reading recorded JSON, which is whatever a client or server sent: every accessor takes unknown
// and gives the type asked for or nothing, so a parser never throws on a shape it did not expect.

export type Json = Record<string, unknown>;

/** JSON from recorded text or bytes, or undefined when it is not JSON. */
export function lenientJson(input: unknown): unknown {
  const text = typeof input === 'string' ? input : Buffer.isBuffer(input) ? input.toString('utf8') : undefined;
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
export const obj = (v: unknown): Json => (isObject(v) ? v : {});
export const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
export const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
export const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
/** Tool-call arguments as the JSON text the ledger stores: providers send a string or an object. */
export const argsText = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v ?? {}));
/** The size of a value as JSON, 0 when absent. */
export const jsonBytes = (v: unknown): number => (v === undefined ? 0 : Buffer.byteLength(JSON.stringify(v)));
