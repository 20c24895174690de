import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { changeOtelSettings, otelSettings } from '../../../electron/app/otelSettings.ts';
import { readAppSettings } from '../../../electron/store/appSettings.ts';
import { tempHome } from '../../helpers/tempHome.ts';

// The core's side of Settings → Export beyond what the window drives: an endpoint that cannot be
// used is said, not thrown; header names come back, values never; headers merge and are removed
// by name; nothing is saved while CAPSEM_OTLP_ENDPOINT decides.

const homes: ReturnType<typeof tempHome>[] = [];
afterEach(() => {
  for (const home of homes.splice(0)) home.remove();
});
const newHome = () => {
  const home = tempHome();
  homes.push(home);
  return home;
};

it('says why nothing is exported when the saved endpoint or the environment cannot be used', () => {
  const home = newHome();
  writeFileSync(join(home.root, 'settings.json'), '{"otel": {"endpoint": "localhost:4318", "headers": {}, "content": false}}');
  expect(otelSettings(home, {})).toMatchObject({
    endpoint: 'localhost:4318',
    url: null,
    status: null,
    problem: 'nothing is exported: the OTLP endpoint "localhost:4318" is not http or https',
  });
  expect(otelSettings(home, { CAPSEM_OTLP_ENDPOINT: 'http://c:4318', CAPSEM_OTLP_HEADERS: 'k' })).toMatchObject({
    endpoint: 'http://c:4318',
    fromEnv: expect.stringContaining('CAPSEM_OTLP_ENDPOINT'),
    problem: 'nothing is exported: CAPSEM_OTLP_HEADERS: "k" is not key=value',
  });
});

it('merges headers, removes them by name, and sends back names only', () => {
  const home = newHome();
  const first = changeOtelSettings(home, {}, { endpoint: ' https://otlp.example ', headers: 'A=1\nb=2' });
  expect(first).toMatchObject({
    endpoint: 'https://otlp.example',
    headerNames: ['a', 'b'],
    url: 'https://otlp.example/v1/traces',
    problem: null,
  });
  expect(JSON.stringify(first)).not.toMatch(/"[12]"/);
  changeOtelSettings(home, {}, { headers: 'b=3\nc=4', removeHeaders: ['A'] });
  expect(readAppSettings(home).otel).toEqual({ endpoint: 'https://otlp.example', headers: { b: '3', c: '4' }, content: false });
  expect(() => changeOtelSettings(home, {}, { endpoint: 'mailto:x@y' })).toThrow('the OTLP endpoint "mailto:x@y" is not http or https');
  expect(() => changeOtelSettings(home, { CAPSEM_OTLP_ENDPOINT: 'http://c:4318' }, { content: true })).toThrow(/CAPSEM_OTLP_ENDPOINT/);
  expect(readAppSettings(home).otel.content).toBe(false);
});
