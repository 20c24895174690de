import { decodeBody } from '../telemetry/decodeBody.ts';

// A stored body as a detail pane shows it: decoded text, JSON pretty-printed. The recorder stores
// bodies with their Content-Encoding already undone (the column keeps the header for the record),
// but a database written by another tool may hold the encoded bytes: those are not valid UTF-8
// (gzip's second byte, 0x8b, never is), so only bytes that are not text are decoded here.

/** Past this, a JSON body is shown as stored rather than parsed and re-indented. */
const MAX_PRETTY_BYTES = 16 << 20;
/** A decompression bomb costs at most this much memory. */
const MAX_DECODED_BYTES = 64 << 20;

export interface BodyText {
  /** null for a binary body. */
  readonly text: string | null;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

function asText(bytes: Uint8Array): string | null {
  try {
    return utf8.decode(bytes);
  } catch {
    return null;
  }
}

function pretty(text: string, bytes: number): string {
  const first = text.trimStart()[0];
  if (bytes > MAX_PRETTY_BYTES || (first !== '{' && first !== '[')) return text;
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

export async function bodyText(body: Uint8Array | null, contentEncoding: string | null): Promise<BodyText> {
  if (!body || body.byteLength === 0) return { text: '' };
  let bytes: Uint8Array = body;
  let text = asText(bytes);
  if (text === null && contentEncoding) {
    const decoded = await decodeBody(Buffer.from(body.buffer, body.byteOffset, body.byteLength), contentEncoding, MAX_DECODED_BYTES);
    if (!decoded.error) {
      bytes = decoded.bytes;
      text = asText(bytes);
    }
  }
  return { text: text === null ? null : pretty(text, bytes.byteLength) };
}

/** A few recently shown bodies, so paging through a large one decodes it once. */
export class BodyTextCache {
  private readonly entries = new Map<string, Promise<BodyText>>();

  constructor(private readonly size = 4) {}

  get(key: string, load: () => Promise<BodyText>): Promise<BodyText> {
    let entry = this.entries.get(key);
    if (entry) this.entries.delete(key);
    else entry = load();
    this.entries.set(key, entry);
    for (const old of this.entries.keys()) {
      if (this.entries.size <= this.size) break;
      this.entries.delete(old);
    }
    return entry;
  }
}
