import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { GUEST_IMAGES, IMAGE_KINDS, orList } from '../../../electron/contract/guestImages.ts';
import type { CliContext } from '../../../electron/cli/context.ts';
import { commandOutput } from '../../../electron/cli/commandOutput.ts';
import { imageOption } from '../../../electron/cli/imageOption.ts';
import { runCommand } from '../../../electron/cli/runCommand.ts';
import { shellCommand } from '../../../electron/cli/shellCommand.ts';
import { capsemHome } from '../../../electron/store/paths.ts';

// capsem run and capsem shell take --image from the list of guest images: its help, its default
// and its error name the kinds the list has.

const discard = (): Writable => new Writable({ write: (_chunk, _encoding, done) => done() });
const ctx: CliContext = {
  home: capsemHome({ CAPSEM_HOME: '/nonexistent/capsem-home' }),
  out: () => {},
  err: () => {},
  output: commandOutput(discard(), discard()),
};

describe('--image', () => {
  it('takes every kind in the list, and the default without it', () => {
    for (const kind of IMAGE_KINDS) expect(imageOption(kind)).toBe(kind);
    expect(imageOption(undefined)).toBe('agent');
  });

  it('refuses another kind in run and shell, listing the kinds', async () => {
    for (const command of [runCommand, shellCommand]) {
      const refused = (async () => command.run(ctx, ['--image', 'debian', '--', 'true']))();
      await expect(refused, command.name).rejects.toMatchObject({
        name: 'UsageError',
        // Today: '--image takes agent or minimal, not "debian"'.
        message: `--image takes ${orList(IMAGE_KINDS)}, not "debian"`,
      });
    }
  });

  it("has a help line for each kind with the list's summary, the default marked", () => {
    for (const command of [runCommand, shellCommand]) {
      expect(command.usage, command.name).toContain(`[--image ${IMAGE_KINDS.join('|')}]`);
      for (const image of GUEST_IMAGES)
        expect(command.usage, command.name).toMatch(new RegExp(`^ {2}(--image KIND)? +${image.id}\\b.*: ${image.summary}$`, 'm'));
    }
    expect(runCommand.usage).toMatch(/^ {2}--image KIND {5}agent \(default\): Debian:/m);
  });
});
