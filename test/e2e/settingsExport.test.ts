import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AppCore } from '../../electron/app/appCore.ts';
import { ExportLedger } from '../../electron/otel/exportLedger.ts';
import { chromiumMissing } from '../helpers/browserHarness.ts';
import { settingsBrowser } from '../helpers/settingsBrowser.ts';
import { tempHome } from '../helpers/tempHome.ts';

// Settings → Export (OpenTelemetry) in the real renderer (browser mode, Chromium driven by
// Playwright) over the real core: an endpoint and headers are saved to CAPSEM_HOME/settings.json,
// a header's value is never shown back, a bad URL or header line is said in the form, the ledger's
// sent, queued and dropped spans show under it, and CAPSEM_OTLP_ENDPOINT makes the fields read-only.

const missing = chromiumMissing();
const home = tempHome();
const envHome = tempHome();
const SECRET = 'Bearer otel-secret-typed-in-settings';
const TEAM = 'team-secret-4242';
const ENV_SECRET = 'env-secret-from-the-app-environment';
const settings = settingsBrowser(missing, [home, envHome]);

const otelSaved = (h: typeof home): unknown => (JSON.parse(readFileSync(join(h.root, 'settings.json'), 'utf8')) as { otel: unknown }).otel;
const text = (id: string) => () => settings.page.getByTestId(id).textContent();
const headerNames = () => settings.page.getByTestId('export-header').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-name')));

/** What a sender would leave in the ledger: 2 spans sent, 2 refused, 1 still queued. */
function seedLedger(h: typeof home, url: string): void {
  const ledger = ExportLedger.open(h);
  try {
    const spans = ['a', 'b', 'c', 'd', 'e'].map((c) => ({ spanId: c.repeat(16) }));
    ledger.enqueue(url, 'session-1', spans, (part) => new Uint8Array(part.length), 2);
    ledger.sent(url, ledger.claimNext(url)!);
    ledger.refused(url, ledger.claimNext(url)!, '127.0.0.1:4318 answered 400 Bad Request');
  } finally {
    ledger.close();
  }
}

describe.skipIf(missing !== null)(`Settings → Export in browser mode${missing ? ` (skipped: ${missing})` : ''}`, () => {
  it('saves an endpoint and headers, never shows a header value, says what is wrong, and shows the status', async () => {
    await settings.page.goto(await settings.serve(new AppCore({ home, checkResults: true, env: {} }), home));
    await settings.page.getByTestId('tab-settings').click();
    await expect.poll(text('export-off')).toBe('No endpoint: nothing is exported.');
    expect(await settings.page.getByTestId('export-content').isChecked()).toBe(false);

    await settings.page.getByTestId('export-endpoint').fill('http://127.0.0.1:4318');
    await settings.page.getByTestId('export-headers').fill(`Authorization=${SECRET}\n\nx-team = ${TEAM}\n`);
    await settings.page.getByTestId('export-save').click();
    await expect.poll(text('export-url')).toBe('Sending to http://127.0.0.1:4318/v1/traces');
    expect(otelSaved(home)).toEqual({
      endpoint: 'http://127.0.0.1:4318',
      headers: { authorization: SECRET, 'x-team': TEAM },
      content: false,
    });
    expect(await headerNames()).toEqual(['authorization', 'x-team']);
    expect(await settings.page.getByTestId('export-headers').inputValue()).toBe('');
    expect(await text('export-sent')()).toBe('Sent: 0 spans in 0 requests');
    const html = await settings.page.content();
    expect(html).not.toContain('otel-secret');
    expect(html).not.toContain(TEAM);

    seedLedger(home, 'http://127.0.0.1:4318/v1/traces');
    await settings.page.reload();
    await settings.page.getByTestId('tab-settings').click();
    await expect.poll(text('export-sent')).toBe('Sent: 2 spans in 1 request');
    expect(await text('export-queued')()).toBe('Queued: 1 span in 1 request');
    expect(await text('export-dropped')()).toBe('Dropped: 2 spans');
    expect(await text('export-drops')()).toContain('2 spans of session-1, 127.0.0.1:4318 answered 400 Bad Request');
    expect(await settings.page.getByTestId('export-endpoint').inputValue()).toBe('http://127.0.0.1:4318');
    expect(await settings.page.content()).not.toContain('otel-secret');

    for (const [endpoint, said] of [
      ['ftp://127.0.0.1:4318', 'the OTLP endpoint "ftp://127.0.0.1:4318" is not http or https'],
      ['not a url', 'the OTLP endpoint "not a url" is not a URL (for example http://localhost:4318)'],
    ] as const) {
      await settings.page.getByTestId('export-endpoint').fill(endpoint);
      await settings.page.getByTestId('export-save').click();
      await expect.poll(text('export-problem')).toBe(said);
    }
    await settings.page.getByTestId('export-endpoint').fill('http://127.0.0.1:4318');
    await settings.page.getByTestId('export-headers').fill(`Authorization ${SECRET}`);
    await settings.page.getByTestId('export-save').click();
    await expect.poll(text('export-problem')).toBe('header line 1 is not key=value');
    expect(await text('export-problem')()).not.toContain('otel-secret');
    expect((otelSaved(home) as { endpoint: string }).endpoint).toBe('http://127.0.0.1:4318');

    await settings.page.getByTestId('export-headers').fill('');
    await settings.page.getByTestId('export-content').check();
    await settings.page.getByTestId('export-save').click();
    await expect.poll(() => settings.page.getByTestId('export-problem').count()).toBe(0);
    expect(otelSaved(home)).toEqual({
      endpoint: 'http://127.0.0.1:4318',
      headers: { authorization: SECRET, 'x-team': TEAM },
      content: true,
    });

    await settings.page.locator('[data-testid=export-header][data-name=x-team]').getByTestId('export-header-remove').click();
    await expect.poll(headerNames).toEqual(['authorization']);
    expect(otelSaved(home)).toEqual({ endpoint: 'http://127.0.0.1:4318', headers: { authorization: SECRET }, content: true });

    await settings.page.getByTestId('export-endpoint').fill('');
    await settings.page.getByTestId('export-save').click();
    await expect.poll(text('export-off')).toBe('No endpoint: nothing is exported.');
    expect(otelSaved(home)).toEqual({ endpoint: null, headers: { authorization: SECRET }, content: true });
  }, 60_000);

  it('shows the export CAPSEM_OTLP_ENDPOINT sets as read-only, header names only', async () => {
    const core = new AppCore({
      home: envHome,
      checkResults: true,
      env: { CAPSEM_OTLP_ENDPOINT: 'http://collector.example:4318', CAPSEM_OTLP_HEADERS: `api-key=${ENV_SECRET}` },
    });
    await settings.page.goto(await settings.serve(core, envHome));
    await settings.page.getByTestId('tab-settings').click();
    await expect.poll(text('export-from-env')).toContain("set for this run by CAPSEM_OTLP_ENDPOINT in the app's environment");
    expect(await settings.page.getByTestId('export-endpoint').inputValue()).toBe('http://collector.example:4318');
    expect(await settings.page.getByTestId('export-endpoint').getAttribute('readonly')).not.toBeNull();
    expect(await settings.page.getByTestId('export-save').isDisabled()).toBe(true);
    expect(await settings.page.getByTestId('export-content').isDisabled()).toBe(true);
    expect(await settings.page.getByTestId('export-headers').count()).toBe(0);
    expect(await headerNames()).toEqual(['api-key']);
    expect(await text('export-url')()).toBe('Sending to http://collector.example:4318/v1/traces');
    expect(await text('export-dropped')()).toBe('Dropped: 0 spans');
    expect(await settings.page.content()).not.toContain(ENV_SECRET);
    await expect(core.handle('otel.set', { endpoint: 'http://elsewhere:4318' })).rejects.toMatchObject({ code: 'not_available' });
  }, 60_000);
});
