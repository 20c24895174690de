import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AppCore } from '../../electron/app/appCore.ts';
import { chromiumMissing } from '../helpers/browserHarness.ts';
import { settingsBrowser } from '../helpers/settingsBrowser.ts';
import { tempHome } from '../helpers/tempHome.ts';

// Settings → Start in the real renderer (browser mode, Chromium driven by Playwright) over the real
// core: the "VM booted ahead" checkbox starts on, turning it off and on again is kept in
// CAPSEM_HOME/settings.json, and a run started with the spare forced off says so.

const missing = chromiumMissing();
const home = tempHome();
const forcedHome = tempHome();
const FORCED = 'off for this run: the app was started with --no-spare-vm';
const settings = settingsBrowser(missing, [home, forcedHome]);

const settingsFile = (h: typeof home): unknown => JSON.parse(readFileSync(join(h.root, 'settings.json'), 'utf8'));

describe.skipIf(missing !== null)(`Settings → Start in browser mode${missing ? ` (skipped: ${missing})` : ''}`, () => {
  it('turns the VM booted ahead off and on, kept in settings.json', async () => {
    await settings.page.goto(await settings.serve(new AppCore({ home, checkResults: true }), home));
    await settings.page.getByTestId('tab-settings').click();
    const box = settings.page.getByTestId('spare-vm');
    await expect.poll(() => box.isChecked()).toBe(true);
    expect(await box.isEnabled()).toBe(true);
    expect(await settings.page.getByTestId('spare-vm-off').count()).toBe(0);

    await box.uncheck();
    await expect.poll(() => box.isChecked()).toBe(false);
    expect(settingsFile(home)).toMatchObject({ spareVm: false });
    await settings.page.reload();
    await settings.page.getByTestId('tab-settings').click();
    await expect.poll(() => settings.page.getByTestId('spare-vm').isChecked()).toBe(false);

    await settings.page.getByTestId('spare-vm').check();
    await expect.poll(() => settings.page.getByTestId('spare-vm').isChecked()).toBe(true);
    expect(settingsFile(home)).toMatchObject({ spareVm: true });
  }, 60_000);

  it('says when a flag has turned it off for this run', async () => {
    await settings.page.goto(await settings.serve(new AppCore({ home: forcedHome, checkResults: true, spareVmOff: FORCED }), forcedHome));
    await settings.page.getByTestId('tab-settings').click();
    await expect.poll(() => settings.page.getByTestId('spare-vm-off').textContent()).toBe(FORCED);
  }, 60_000);
});
