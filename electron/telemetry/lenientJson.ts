/** JSON from recorded text or bytes, or undefined when it is not JSON: recorded bodies are whatever was sent. */
export function lenientJson(input: unknown): unknown {
  const text = typeof input === 'string' ? input : Buffer.isBuffer(input) ? input.toString('utf8') : undefined;
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
