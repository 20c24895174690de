import { createHash } from 'node:crypto';
import tar from 'tar-stream';
import { ARCHIVE_FORMAT } from '../../electron/archive/archiveFormat.ts';

// Session archives built by hand, as an attacker would: any members, in any order, with a
// manifest that says whatever the test wants it to say.

export interface CraftedMember {
  readonly name: string;
  readonly body?: Buffer;
  readonly type?: 'file' | 'symlink' | 'link' | 'directory';
  readonly linkname?: string;
}

/** A tar of `members`, in the order given. */
export async function craftTar(members: readonly CraftedMember[]): Promise<Buffer> {
  const pack = tar.pack();
  const chunks: Buffer[] = [];
  pack.on('data', (c: unknown) => chunks.push(c as Buffer));
  const ended = new Promise<void>((resolve) => pack.on('end', () => resolve()));
  for (const m of members) {
    await new Promise<void>((resolve, reject) => {
      if (m.type === 'symlink' || m.type === 'link' || m.type === 'directory')
        pack.entry({ name: m.name, type: m.type, linkname: m.linkname }, (err) => (err ? reject(err) : resolve()));
      else pack.entry({ name: m.name, size: m.body!.length }, m.body!, (err) => (err ? reject(err) : resolve()));
    });
  }
  pack.finalize();
  await ended;
  return Buffer.concat(chunks);
}

export const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

/** A valid version 1 manifest listing `members` with their true sizes and checksums, then `extra` over it. */
export function manifestFor(members: Record<string, Buffer>, extra: Record<string, unknown> = {}): Buffer {
  return Buffer.from(
    JSON.stringify({
      format: ARCHIVE_FORMAT,
      formatVersion: 1,
      sessionId: '0c9a7d3e-1111-4222-8333-944455556666',
      name: 'crafted',
      status: 'stopped',
      createdAt: '2026-01-01T00:00:00.000Z',
      stoppedAt: '2026-01-01T01:00:00.000Z',
      exportedAt: '2026-01-02T00:00:00.000Z',
      appVersion: 'test',
      counts: {},
      members: Object.entries(members).map(([path, body]) => ({ path, bytes: body.length, sha256: sha256(body) })),
      ...extra,
    }),
  );
}

/** An archive holding `members` (manifest first), every checksum right. */
export function craftArchive(members: Record<string, Buffer>, extra: Record<string, unknown> = {}): Promise<Buffer> {
  return craftTar([
    { name: 'manifest.json', body: manifestFor(members, extra) },
    ...Object.entries(members).map(([name, body]) => ({ name, body })),
  ]);
}
