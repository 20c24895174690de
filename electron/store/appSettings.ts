import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { ensureHomeRoot, type CapsemHome } from './paths.ts';

// The app's own settings, CAPSEM_HOME/settings.json: what Settings changes beyond keys. One writer
// (the app that owns the home); the file is replaced whole. A file that does not parse, or a value
// of the wrong type, reads as the default: a setting never stops the app from starting.

const FILE = 'settings.json';

export const AppSettingsSchema = z.object({
  /** Keep one agent-image VM booted ahead, so Start adopts it rather than waiting for a boot. */
  spareVm: z.boolean().catch(true).default(true),
  /** Where sessions go as OpenTelemetry traces (otel/otelTarget.ts); no endpoint, no export. */
  otel: z
    .object({
      endpoint: z.string().nullable().catch(null).default(null),
      /** Sent with every request: an API key for the backend, say. */
      headers: z.record(z.string(), z.string()).catch({}).default({}),
      /** Message contents, tool arguments and results in the spans (the conventions make them opt-in). */
      content: z.boolean().catch(false).default(false),
    })
    .catch({ endpoint: null, headers: {}, content: false })
    .default({ endpoint: null, headers: {}, content: false }),
});
export type AppSettings = z.infer<typeof AppSettingsSchema>;

export function readAppSettings(home: CapsemHome): AppSettings {
  try {
    return AppSettingsSchema.parse(JSON.parse(readFileSync(join(home.root, FILE), 'utf8')));
  } catch {
    return AppSettingsSchema.parse({});
  }
}

export function writeAppSettings(home: CapsemHome, change: Partial<AppSettings>): AppSettings {
  ensureHomeRoot(home);
  const settings = { ...readAppSettings(home), ...change };
  const path = join(home.root, FILE);
  const staged = `${path}.${process.pid}.tmp`;
  writeFileSync(staged, `${JSON.stringify(settings, null, 2)}\n`, { mode: 0o600 });
  renameSync(staged, path);
  return settings;
}

/**
 * Why the spare VM is off whatever Settings say, or null: `CAPSEM_SPARE_VM=0` in the app's
 * environment, or `--no-spare-vm` on its command line (`npm start -- --no-spare-vm`).
 */
export function spareVmForcedOff(env: NodeJS.ProcessEnv, argv: readonly string[]): string | null {
  if (argv.includes('--no-spare-vm')) return 'off for this run: the app was started with --no-spare-vm';
  if (env.CAPSEM_SPARE_VM === '0') return 'off for this run: CAPSEM_SPARE_VM=0 is set';
  return null;
}
