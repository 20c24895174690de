import { createHash } from 'node:crypto';
import { createReadStream, readFileSync, renameSync, statSync, writeFileSync, type BigIntStats } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { ImageKindSchema } from '../../contract/guestImages.ts';

export const MANIFEST_NAME = 'manifest.json';

const fileName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'a plain file name inside the image folder');
const sha256 = z.string().regex(/^[0-9a-f]{64}$/);

const manifestSchema = z.object({
  format: z.literal(1),
  kind: ImageKindSchema,
  hash: sha256,
  createdAt: z.string(),
  /** What went into `hash`, kept for people reading the manifest. */
  inputs: z.record(z.string(), z.string()),
  /** The agent image's Debian squashfs alone; a rebuild for a new agent binary reuses a matching one. */
  rootfsHash: sha256.optional(),
  /** The coding agents' squashfs alone, reused the same way by an image whose agents are unchanged. */
  agentsHash: sha256.optional(),
  files: z.record(fileName, z.object({ sha256, size: z.number().int().nonnegative() })),
});

export type ImageManifest = z.infer<typeof manifestSchema>;

/** Streams the file, so hashing an 80 MB squashfs does not stall the event loop. */
export function sha256File(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256');
    createReadStream(path)
      .on('data', (chunk) => hash.update(chunk))
      .on('error', reject)
      .on('end', () => resolve(hash.digest('hex')));
  });
}

export async function describeFiles(dir: string, names: readonly string[]): Promise<ImageManifest['files']> {
  const files: ImageManifest['files'] = {};
  for (const name of names) {
    const path = join(dir, name);
    files[name] = { sha256: await sha256File(path), size: statSync(path).size };
  }
  return files;
}

export function writeManifest(dir: string, manifest: ImageManifest): void {
  writeFileSync(join(dir, MANIFEST_NAME), `${JSON.stringify(manifestSchema.parse(manifest), null, 2)}\n`, { mode: 0o644 });
}

export function readManifest(dir: string): ImageManifest {
  const path = join(dir, MANIFEST_NAME);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(`guest image manifest ${path} cannot be read: ${(err as Error).message}`);
  }
  const parsed = manifestSchema.safeParse(raw);
  if (!parsed.success) throw new Error(`guest image manifest ${path} is malformed: ${parsed.error.issues[0]?.message ?? 'unknown'}`);
  return parsed.data;
}

/** Where a folder records the files it has hashed, by identity, so an unchanged file is not read again on every boot. */
export const VERIFIED_NAME = 'verified.json';

const verifiedSchema = z.record(fileName, z.object({ sha256, identity: z.string() }));

/**
 * What names one version of a file's bytes here: any write, truncate, rename over it or link
 * changes its ctime, which no caller can set back; so an unchanged identity is the bytes once hashed.
 */
function fileIdentity(stat: BigIntStats): string {
  return [stat.dev, stat.ino, stat.size, stat.mtimeNs, stat.ctimeNs].join(':');
}

function readVerified(dir: string): z.infer<typeof verifiedSchema> {
  try {
    return verifiedSchema.parse(JSON.parse(readFileSync(join(dir, VERIFIED_NAME), 'utf8')));
  } catch {
    // Missing or unreadable: every file is hashed afresh, and the record written again.
    return {};
  }
}

function writeVerified(dir: string, verified: z.infer<typeof verifiedSchema>): void {
  const tmp = join(dir, `.${VERIFIED_NAME}.${process.pid}.tmp`);
  try {
    writeFileSync(tmp, JSON.stringify(verified), { mode: 0o644 });
    renameSync(tmp, join(dir, VERIFIED_NAME));
  } catch {
    // A folder that cannot take the record (read-only) costs a hash on the next boot, nothing else.
  }
}

/**
 * Checks every file's SHA-256 against the manifest; the first mismatch is an error that names the
 * file. A file is read and hashed when it is new or changed since it was last hashed here (hashing
 * the agent image's root took 1.9-3.2 s of every start); its identity is then recorded beside it.
 */
export async function verifyManifestFiles(dir: string, manifest: ImageManifest): Promise<void> {
  const verified = readVerified(dir);
  let changed = false;
  for (const [name, expected] of Object.entries(manifest.files)) {
    const path = join(dir, name);
    const missing = (err: unknown): Error =>
      new Error(
        `guest image file ${path} is missing or unreadable (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); delete ${dir} to rebuild it`,
      );
    let identity: string;
    try {
      identity = fileIdentity(statSync(path, { bigint: true }));
    } catch (err) {
      throw missing(err);
    }
    const known = verified[name];
    if (known && known.sha256 === expected.sha256 && known.identity === identity) continue;
    let actual: string;
    try {
      actual = await sha256File(path);
    } catch (err) {
      throw missing(err);
    }
    if (actual !== expected.sha256) {
      throw new Error(
        `guest image file ${path} does not match its manifest (sha256 ${actual}, expected ${expected.sha256}); delete ${dir} to rebuild it`,
      );
    }
    // Stated after the hash: a write while it was read leaves an identity that will not match next time.
    const after = fileIdentity(statSync(path, { bigint: true }));
    if (after === identity) {
      verified[name] = { sha256: actual, identity };
      changed = true;
    }
  }
  if (changed) writeVerified(dir, verified);
}
