import { spawnSync } from 'node:child_process';
import { statSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json, startUpstream, type Upstream } from '../helpers/mockUpstreams.ts';
import { runCapsem, runCapsemAsync, USER_FOLDER } from '../helpers/runCapsem.ts';
import { tempHome } from '../helpers/tempHome.ts';

// A key stored with `capsem keys set` (read from stdin, kept 0600) serves sessions like one from
// the environment: the recorded program gets a stand-in, the provider's host gets the stored key.

const BIN = fileURLToPath(new URL('../../bin/capsem.mjs', import.meta.url));
const home = tempHome();
const upstreamHome = tempHome();
const STORED = 'sk-proj-STORED-key-0123456789abcdef';
let upstream: Upstream;

beforeAll(async () => {
  upstream = await startUpstream(upstreamHome, ['api.openai.com'], (_req, _body, res) => json(res, 200, { ok: true }));
}, 30_000);
afterAll(async () => {
  await upstream.close();
  home.remove();
  upstreamHome.remove();
});

describe('capsem keys', () => {
  it('stores a key from stdin in a 0600 file, lists where each key comes from and never prints one', () => {
    const set = spawnSync(process.execPath, [BIN, 'keys', 'set', 'openai'], {
      cwd: USER_FOLDER,
      env: { ...process.env, CAPSEM_HOME: home.root },
      input: `${STORED}\n`,
      encoding: 'utf8',
    });
    expect(set.status, set.stderr).toBe(0);
    expect(statSync(`${home.root}/keys.json`).mode & 0o777).toBe(0o600);
    const list = runCapsem(home.root, ['keys', 'list'], { OPENAI_API_KEY: '', ANTHROPIC_API_KEY: 'sk-ant-from-env-123456' });
    expect(list.stdout).toMatch(/^openai +stored$/m);
    expect(list.stdout).toMatch(/^anthropic +from ANTHROPIC_API_KEY$/m);
    expect(list.stdout + list.stderr).not.toContain(STORED);
    expect(list.stdout).not.toContain('sk-ant-from-env');
  });

  it('gives a recorded program the stand-in and the provider the stored key', async () => {
    const caFile = `${upstreamHome.root}/ca.pem`;
    writeFileSync(caFile, upstream.caPem);
    const script = `${upstreamHome.root}/probe.mjs`;
    writeFileSync(
      script,
      `const r = await fetch('https://api.openai.com/v1/models', { headers: { authorization: 'Bearer ' + process.env.OPENAI_API_KEY } }); console.log('KEY ' + process.env.OPENAI_API_KEY + ' ' + r.status);`,
    );
    const run = await runCapsemAsync(
      home.root,
      ['record', '--', process.execPath, script],
      {
        OPENAI_API_KEY: '',
        CAPSEM_RESOLVE: `api.openai.com:443=127.0.0.1:${upstream.port}`,
        CAPSEM_UPSTREAM_CA_FILE: caFile,
      },
      { timeoutMs: 60_000 },
    );
    // The stand-in is as long as the key it stands for.
    expect(run.stdout, run.stderr).toMatch(new RegExp(`^KEY sk-proj-[A-Za-z0-9_-]{${STORED.length - 8}} 200$`, 'm'));
    expect(upstream.requests.map((r) => r.headers.authorization)).toEqual([`Bearer ${STORED}`]);
  });

  it('substitutes on HTTP/2 too: curl --http2 carrying the stand-in gets the stored key to the provider', async () => {
    const run = await runCapsemAsync(
      home.root,
      [
        'record',
        '--',
        'sh',
        '-c',
        'curl -sS --http2 -o /dev/null -w "%{http_version} %{http_code}" -H "authorization: Bearer $OPENAI_API_KEY" https://api.openai.com/v1/models',
      ],
      {
        OPENAI_API_KEY: '',
        CAPSEM_RESOLVE: `api.openai.com:443=127.0.0.1:${upstream.port}`,
        CAPSEM_UPSTREAM_CA_FILE: `${upstreamHome.root}/ca.pem`,
      },
      { timeoutMs: 60_000 },
    );
    expect(run.stdout, run.stderr).toBe('2 200');
    expect(upstream.requests.map((r) => r.headers.authorization)).toEqual([`Bearer ${STORED}`, `Bearer ${STORED}`]);
    const rm = runCapsem(home.root, ['keys', 'rm', 'openai']);
    expect(rm.stdout).toContain('removed the stored openai key');
  });
});
