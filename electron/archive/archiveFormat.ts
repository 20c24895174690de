import { z } from 'zod';

// The session archive: a tar (optionally gzip-compressed) whose first member is manifest.json,
// followed by the members it lists, each a plain file at the archive's top level. The manifest
// names every member with its size and SHA-256, so an import can refuse anything it did not
// announce before writing a byte of it.
// Version 2 added contents.pack, the workspace contents the session names (contentsPack.ts); a
// version 1 archive (from before it) is read as ever, and may not hold one.

export const ARCHIVE_FORMAT = 'capsem-session-archive';
export const ARCHIVE_FORMAT_VERSION = 2;
export const MANIFEST_NAME = 'manifest.json';

/** The members an archive may hold; session.db is required, the others are not. */
export const MEMBER_NAMES = ['session.db', 'pty.log', 'serial.log', 'contents.pack'] as const;
export type MemberName = (typeof MEMBER_NAMES)[number];

/** Members a version 1 archive cannot hold: they came with a later version. */
export const MEMBERS_SINCE: Partial<Record<MemberName, number>> = { 'contents.pack': 2 };

export const ManifestMember = z.strictObject({
  path: z.enum(MEMBER_NAMES),
  bytes: z.number().int().nonnegative(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
});

export const Manifest = z.strictObject({
  format: z.literal(ARCHIVE_FORMAT),
  formatVersion: z.number().int().min(1).max(ARCHIVE_FORMAT_VERSION),
  sessionId: z.string().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/),
  name: z.string().nullable(),
  status: z.string().nullable(),
  createdAt: z.string().nullable(),
  stoppedAt: z.string().nullable(),
  exportedAt: z.string(),
  appVersion: z.string(),
  /** Rows per table of the exported session.db, for a person reading the manifest and for checks. */
  counts: z.record(z.string(), z.number().int().nonnegative()),
  members: z.array(ManifestMember).min(1),
});
export type Manifest = z.infer<typeof Manifest>;
export type ManifestMember = z.infer<typeof ManifestMember>;

/**
 * What an import accepts. The defaults are far above any real session (the benchmark's 100,000
 * events with 200 MB of bodies is a quarter of a GiB) and far below what would fill a disk.
 */
export interface ImportLimits {
  readonly maxMemberBytes: number;
  readonly maxTotalBytes: number;
  readonly maxManifestBytes: number;
  /** Inflated/compressed ratio past which a gzip stream counts as a bomb... */
  readonly maxRatio: number;
  /** ...once it has inflated this much: small streams of zeros are legitimately very compressible. */
  readonly ratioAfterBytes: number;
  /** How long checking the staged session.db may take before the import is refused. */
  readonly maxValidationSeconds: number;
}

export const DEFAULT_IMPORT_LIMITS: ImportLimits = {
  maxMemberBytes: 16 * 2 ** 30,
  maxTotalBytes: 32 * 2 ** 30,
  maxManifestBytes: 1 << 20,
  // Deflate tops out near 1032:1 (all zeros); text and SQLite pages come in under 20:1.
  maxRatio: 200,
  ratioAfterBytes: 64 << 20,
  // A 16 GiB member read at 100 MB/s is checked in under three minutes; ten leave room for a slow disk.
  maxValidationSeconds: 600,
};

/** Every refusal of an import is one of these, with a message that says what was wrong. */
export class ArchiveRejectedError extends Error {
  override name = 'ArchiveRejectedError';
}
