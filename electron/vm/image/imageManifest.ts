import { createHash } from 'node:crypto';
import { createReadStream, readFileSync, statSync, writeFileSync } from 'node:fs';
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
  /** The agent image's squashfs alone; a rebuild for a new agent binary reuses a matching one. */
  rootfsHash: sha256.optional(),
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

/** Recomputes every file's SHA-256; the first mismatch is an error that names the file. */
export async function verifyManifestFiles(dir: string, manifest: ImageManifest): Promise<void> {
  for (const [name, expected] of Object.entries(manifest.files)) {
    const path = join(dir, name);
    let actual: string;
    try {
      actual = await sha256File(path);
    } catch (err) {
      throw new Error(
        `guest image file ${path} is missing or unreadable (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); delete ${dir} to rebuild it`,
      );
    }
    if (actual !== expected.sha256) {
      throw new Error(
        `guest image file ${path} does not match its manifest (sha256 ${actual}, expected ${expected.sha256}); delete ${dir} to rebuild it`,
      );
    }
  }
}
