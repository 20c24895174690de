import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { readAppSettings, spareVmForcedOff, writeAppSettings } from '../../../electron/store/appSettings.ts';
import { tempHome } from '../../helpers/tempHome.ts';

// The spare VM's switches: Settings (settings.json) keep it on or off across runs; the flag and the
// environment turn it off for one run and say which did.

const homes: ReturnType<typeof tempHome>[] = [];
afterEach(() => {
  for (const home of homes.splice(0)) home.remove();
});

it('keeps a VM booted ahead unless settings.json turned it off; a broken file reads as the default', () => {
  const home = tempHome();
  homes.push(home);
  expect(readAppSettings(home).spareVm).toBe(true);
  expect(writeAppSettings(home, { spareVm: false })).toMatchObject({ spareVm: false });
  expect(readAppSettings(home).spareVm).toBe(false);
  writeFileSync(join(home.root, 'settings.json'), '{"spareVm": "no"');
  expect(readAppSettings(home).spareVm).toBe(true);
  writeFileSync(join(home.root, 'settings.json'), '{"spareVm": "no"}');
  expect(readAppSettings(home).spareVm).toBe(true);
});

it('keeps the export endpoint, headers and content switch; a broken otel entry reads as no export', () => {
  const home = tempHome();
  homes.push(home);
  expect(readAppSettings(home).otel).toEqual({ endpoint: null, headers: {}, content: false });
  const otel = { endpoint: 'http://127.0.0.1:4318', headers: { authorization: 'Bearer k' }, content: true };
  expect(writeAppSettings(home, { otel })).toEqual({ spareVm: true, otel });
  expect(writeAppSettings(home, { spareVm: false })).toEqual({ spareVm: false, otel });
  expect(readAppSettings(home)).toEqual({ spareVm: false, otel });
  writeFileSync(join(home.root, 'settings.json'), '{"spareVm": false, "otel": {"endpoint": 4318, "headers": ["k"], "content": "yes"}}');
  expect(readAppSettings(home)).toEqual({ spareVm: false, otel: { endpoint: null, headers: {}, content: false } });
  writeFileSync(join(home.root, 'settings.json'), '{"otel": "http://127.0.0.1:4318"}');
  expect(readAppSettings(home).otel).toEqual({ endpoint: null, headers: {}, content: false });
});

it('is off for one run with --no-spare-vm or CAPSEM_SPARE_VM=0, saying which', () => {
  expect(spareVmForcedOff({}, ['node', 'start.mjs'])).toBeNull();
  expect(spareVmForcedOff({ CAPSEM_SPARE_VM: '1' }, [])).toBeNull();
  expect(spareVmForcedOff({}, ['--no-spare-vm'])).toMatch(/--no-spare-vm/);
  expect(spareVmForcedOff({ CAPSEM_SPARE_VM: '0' }, [])).toMatch(/CAPSEM_SPARE_VM=0/);
});
