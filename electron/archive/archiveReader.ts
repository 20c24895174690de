import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { closeSync, createReadStream, createWriteStream, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import tar from 'tar-stream';
import {
  ARCHIVE_FORMAT,
  ARCHIVE_FORMAT_VERSION,
  ArchiveRejectedError,
  Manifest,
  MANIFEST_NAME,
  MEMBERS_SINCE,
  type ImportLimits,
  type ManifestMember,
} from './archiveFormat.ts';

// Reads an archive into a staging folder, trusting nothing in it: the manifest must come first and
// pass its schema; every later member must be a plain file at the top level that the manifest
// lists, of the size it states, with the checksum it states. Sizes are checked against the limits
// before a member is stored, and a gzip stream is metered so a bomb is stopped while inflating.

export type FileKind = 'gzip' | 'tar' | 'sqlite' | 'unknown';

export function sniffFile(path: string): FileKind {
  const fd = openSync(path, 'r');
  try {
    const head = Buffer.alloc(512);
    const n = readSync(fd, head, 0, head.length, 0);
    if (n >= 2 && head[0] === 0x1f && head[1] === 0x8b) return 'gzip';
    if (n >= 16 && head.subarray(0, 16).toString('latin1') === 'SQLite format 3\u0000') return 'sqlite';
    if (n >= 262 && head.subarray(257, 262).toString('latin1') === 'ustar') return 'tar';
    return 'unknown';
  } finally {
    closeSync(fd);
  }
}

const MiB = (n: number): string => `${(n / 2 ** 20).toFixed(1)} MiB`;

/** Counts inflated bytes and stops the stream at the total limit or at a bomb's ratio. */
class InflateMeter extends Transform {
  inflated = 0;

  constructor(
    private readonly compressedSoFar: () => number,
    private readonly limits: ImportLimits,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.inflated += chunk.length;
    // The tar's own headers and padding ride on top of the members: allow a MiB for them.
    if (this.inflated > this.limits.maxTotalBytes + this.limits.maxManifestBytes + (1 << 20)) {
      done(
        new ArchiveRejectedError(
          `the archive inflates past the import limit of ${MiB(this.limits.maxTotalBytes)}; refusing it as a compression bomb`,
        ),
      );
      return;
    }
    const ratio = this.inflated / Math.max(1, this.compressedSoFar());
    if (this.inflated > this.limits.ratioAfterBytes && ratio > this.limits.maxRatio) {
      done(
        new ArchiveRejectedError(
          `the archive looks like a compression bomb: ${MiB(this.inflated)} inflated from ${MiB(this.compressedSoFar())} (over ${this.limits.maxRatio}:1); refusing it`,
        ),
      );
      return;
    }
    done(null, chunk);
  }
}

function checkName(header: tar.Header): void {
  const name = header.name;
  if (header.type === 'symlink' || header.type === 'link') {
    throw new ArchiveRejectedError(
      `refusing member "${name}": it is a ${header.type === 'link' ? 'hard link' : 'symbolic link'} to "${header.linkname}"; an archive holds plain files only`,
    );
  }
  if (name.startsWith('/') || name.startsWith('\\') || /^[A-Za-z]:/.test(name)) {
    throw new ArchiveRejectedError(`refusing member "${name}": an absolute path`);
  }
  if (name.split(/[\\/]/).includes('..'))
    throw new ArchiveRejectedError(`refusing member "${name}": its path climbs out of the archive (path traversal)`);
  if (header.type !== 'file')
    throw new ArchiveRejectedError(`refusing member "${name}" of type ${header.type}: an archive holds plain files only`);
}

function parseManifest(text: string): Manifest {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new ArchiveRejectedError(`manifest.json is not valid JSON: ${(err as Error).message}`);
  }
  const head = raw as { format?: unknown; formatVersion?: unknown } | null;
  if (!head || typeof head !== 'object' || head.format !== ARCHIVE_FORMAT)
    throw new ArchiveRejectedError(`manifest.json does not describe a Capsem session archive (format is not "${ARCHIVE_FORMAT}")`);
  if (typeof head.formatVersion === 'number' && head.formatVersion > ARCHIVE_FORMAT_VERSION) {
    throw new ArchiveRejectedError(
      `the archive has format version ${head.formatVersion}, newer than this Capsem reads (${ARCHIVE_FORMAT_VERSION}); upgrade Capsem to import it`,
    );
  }
  const parsed = Manifest.safeParse(raw);
  if (!parsed.success)
    throw new ArchiveRejectedError(
      `manifest.json is not a valid manifest: ${parsed.error.issues
        .map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`)
        .slice(0, 3)
        .join('; ')}`,
    );
  return parsed.data;
}

function checkManifestLimits(manifest: Manifest, limits: ImportLimits): void {
  const seen = new Set<string>();
  let total = 0;
  for (const m of manifest.members) {
    if (seen.has(m.path)) throw new ArchiveRejectedError(`manifest.json lists "${m.path}" twice`);
    seen.add(m.path);
    const since = MEMBERS_SINCE[m.path];
    if (since !== undefined && manifest.formatVersion < since)
      throw new ArchiveRejectedError(`manifest.json lists "${m.path}", which a version ${manifest.formatVersion} archive cannot hold`);
    if (m.bytes > limits.maxMemberBytes)
      throw new ArchiveRejectedError(
        `member "${m.path}" is ${MiB(m.bytes)}, over the import limit of ${MiB(limits.maxMemberBytes)} per member`,
      );
    total += m.bytes;
  }
  if (!seen.has('session.db')) throw new ArchiveRejectedError('manifest.json lists no session.db');
  if (total > limits.maxTotalBytes)
    throw new ArchiveRejectedError(`the archive holds ${MiB(total)}, over the import limit of ${MiB(limits.maxTotalBytes)}`);
}

async function readAll(entry: AsyncIterable<Buffer>, max: number, name: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of entry) {
    size += chunk.length;
    if (size > max) throw new ArchiveRejectedError(`${name} is over ${MiB(max)}`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

async function storeMember(entry: AsyncIterable<Buffer>, path: string, onBytes: (n: number) => void): Promise<string> {
  const hash = createHash('sha256');
  const out = createWriteStream(path, { flags: 'wx', mode: 0o600 });
  try {
    for await (const chunk of entry) {
      hash.update(chunk);
      onBytes(chunk.length);
      if (!out.write(chunk)) await once(out, 'drain');
    }
    out.end();
    await once(out, 'finish');
  } catch (err) {
    out.destroy();
    throw err;
  }
  return hash.digest('hex');
}

/** Extracts and verifies `file` into `into` (an empty private folder); returns its manifest. */
export async function extractArchive(
  file: string,
  into: string,
  limits: ImportLimits,
  onProgress?: (done: number, total: number) => void,
): Promise<Manifest> {
  const kind = sniffFile(file);
  if (kind !== 'gzip' && kind !== 'tar') throw new ArchiveRejectedError(`${file} is not a Capsem session archive (neither tar nor gzip)`);
  const source = createReadStream(file, { highWaterMark: 1 << 20 });
  let compressed = 0;
  source.on('data', (chunk) => (compressed += chunk.length));
  const extract = tar.extract();
  const meter = new InflateMeter(() => compressed, limits);
  // The meter's refusal is the reason; the tar parser downstream only sees its stream cut short.
  let refusal: ArchiveRejectedError | null = null;
  meter.on('error', (err) => {
    if (err instanceof ArchiveRejectedError) refusal = err;
  });
  const stages = kind === 'gzip' ? [source, createGunzip(), meter, extract] : [source, extract];
  const feeding = pipeline(stages as unknown as [NodeJS.ReadableStream, NodeJS.WritableStream]);
  feeding.catch(() => undefined);
  let manifest: Manifest | null = null;
  const stored = new Map<string, ManifestMember>();
  let done = 0;
  try {
    for await (const entry of extract) {
      const header = entry.header;
      const body = entry as unknown as AsyncIterable<Buffer>;
      if (!manifest) {
        if (header.name !== MANIFEST_NAME || header.type !== 'file') {
          throw new ArchiveRejectedError(`not a Capsem session archive: its first member is "${header.name}", not ${MANIFEST_NAME}`);
        }
        if (header.size > limits.maxManifestBytes) throw new ArchiveRejectedError(`manifest.json is over ${MiB(limits.maxManifestBytes)}`);
        manifest = parseManifest((await readAll(body, limits.maxManifestBytes, MANIFEST_NAME)).toString('utf8'));
        checkManifestLimits(manifest, limits);
        continue;
      }
      checkName(header);
      const listed = manifest.members.find((m) => m.path === header.name);
      if (!listed) throw new ArchiveRejectedError(`member "${header.name}" is not listed in manifest.json`);
      if (stored.has(listed.path)) throw new ArchiveRejectedError(`member "${header.name}" appears twice`);
      if (header.size !== listed.bytes)
        throw new ArchiveRejectedError(`member "${header.name}" is ${header.size} bytes but manifest.json says ${listed.bytes}`);
      const total = manifest.members.reduce((sum, m) => sum + m.bytes, 0);
      const sha256 = await storeMember(body, join(into, listed.path), (n) => onProgress?.((done += n), total));
      if (sha256 !== listed.sha256)
        throw new ArchiveRejectedError(
          `checksum mismatch for "${header.name}": manifest.json says ${listed.sha256}, the member hashes to ${sha256}`,
        );
      stored.set(listed.path, listed);
    }
    await feeding;
  } catch (err) {
    source.destroy();
    extract.destroy();
    if (refusal) throw refusal;
    // A system error (disk full, permissions) is ours to report as is; anything else is the file's fault.
    if (err instanceof ArchiveRejectedError || typeof (err as NodeJS.ErrnoException).code === 'string') throw err;
    throw new ArchiveRejectedError(`${file} is not a readable archive: ${(err as Error).message}`);
  }
  if (!manifest) throw new ArchiveRejectedError(`not a Capsem session archive: ${file} has no ${MANIFEST_NAME}`);
  for (const m of manifest.members) {
    if (!stored.has(m.path)) throw new ArchiveRejectedError(`manifest.json lists "${m.path}" but the archive does not hold it`);
  }
  return manifest;
}
