import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DEEP_BODY,
  escapeAttempts,
  LOOPBACK_DOMAINS,
  LOOPBACK_SECRET,
  PARSER_HOSTS,
  parserBreakingAttempts,
  startLoopbackSecret,
  type EscapeAttempt,
  type LoopbackSecret,
} from '../helpers/escapeAttempts.ts';
import { json, startUpstream, type Upstream } from '../helpers/mockUpstreams.ts';
import { runCapsem, runCapsemAsync, type CliResult } from '../helpers/runCapsem.ts';
import { sessionRows } from '../helpers/sessionRows.ts';
import { tempHome } from '../helpers/tempHome.ts';

// The containment review's repros for the proxy, through the real `capsem record` run from a
// user's folder: a hostile program tries every way it found to reach the host's loopback, to
// front another destination with its Host header, to use the proxy without the session's
// credentials, and to make a parser drop the record of what it sent. (The same repros from
// inside a real VM are in vmBoot.test.ts.)

const PROBE = fileURLToPath(new URL('../fixtures/egressProbe.mjs', import.meta.url));
const FRONTED = 'files.guest-test.example';
const home = tempHome();
const upstreamHome = tempHome();
let secret: LoopbackSecret;
let upstream: Upstream;
let result: CliResult;
let attempts: EscapeAttempt[];
let answers: { label: string; status: string; leaked: boolean }[];
function rows<T>(sql: string, ...params: unknown[]): T[] {
  const id = (JSON.parse(runCapsem(home.root, ['list', '--json']).stdout) as { id: string }[])[0]!.id;
  return sessionRows<T>(`${home.root}/run/sessions/${id}/session.db`, sql, ...params);
}

beforeAll(async () => {
  secret = await startLoopbackSecret();
  const hosts = [FRONTED, ...PARSER_HOSTS];
  upstream = await startUpstream(upstreamHome, hosts, (req, _body, res) => json(res, 200, { path: req.url }));
  const caFile = `${upstreamHome.root}/upstream-ca.pem`;
  writeFileSync(caFile, upstream.caPem);
  attempts = [
    ...escapeAttempts(secret.port, FRONTED),
    {
      label: 'a request without the session credentials',
      request: `GET http://${FRONTED}/ HTTP/1.1\r\nHost: ${FRONTED}\r\nConnection: close\r\n\r\n`,
      expect: 407,
    },
    ...parserBreakingAttempts(),
  ];
  result = await runCapsemAsync(home.root, ['record', '--name', 'hostile', '--', process.execPath, PROBE], {
    PROBE: JSON.stringify(attempts),
    SECRET: LOOPBACK_SECRET,
    CAPSEM_RESOLVE: hosts.map((h) => `${h}:443=127.0.0.1:${upstream.port}`).join(','),
    CAPSEM_UPSTREAM_CA_FILE: caFile,
  });
  answers = JSON.parse(result.stdout.trim().split('\n').at(-1)!) as typeof answers;
}, 120_000);

afterAll(async () => {
  secret.close();
  await upstream.close();
  home.remove();
  upstreamHome.remove();
});

describe('containment through capsem record', () => {
  it('answers every attempt as the containment promises, and nothing reaches the host or leaks', () => {
    expect(result.code, result.stderr).toBe(0);
    expect(answers.map((a) => [a.label, a.status.slice(0, 12)])).toEqual(attempts.map((a) => [a.label, `HTTP/1.1 ${a.expect}`]));
    expect(answers.filter((a) => a.leaked)).toEqual([]);
    expect(secret.hits).toBe(0);
    // Only the two allowed model calls reached the upstream: the fronted name was never dialled.
    expect(upstream.requests.map((r) => r.path)).toEqual(['/v1/messages', '/v1beta/models/%E0%A4%A:generateContent']);
  });

  it('records each refused attempt as denied, under the destination that was checked', () => {
    const denied = rows<{ domain: string; status_code: number; error_kind: string; matched_rule: string }>(
      "SELECT domain, status_code, error_kind, matched_rule FROM net_events WHERE decision = 'denied' ORDER BY seq",
    );
    const loopback = denied.filter((r) => r.status_code === 403 && (LOOPBACK_DOMAINS as readonly string[]).includes(r.domain));
    expect(loopback).toHaveLength(attempts.filter((a) => a.expect === 403).length - 1);
    expect(loopback.every((r) => r.error_kind === 'destination_private' && r.matched_rule === 'default.deny-private-address')).toBe(true);
    expect(denied.filter((r) => r.domain === '169.254.169.254')).toEqual([
      { domain: '169.254.169.254', status_code: 403, error_kind: 'destination_denied', matched_rule: 'default.deny-cloud-metadata' },
    ]);
    expect(denied.filter((r) => r.status_code === 421)).toEqual([
      { domain: FRONTED, status_code: 421, error_kind: 'misdirected_request', matched_rule: 'proxy.bad-request' },
      { domain: FRONTED, status_code: 421, error_kind: 'misdirected_request', matched_rule: 'proxy.bad-request' },
      { domain: FRONTED, status_code: 421, error_kind: 'misdirected_request', matched_rule: 'proxy.bad-request' },
    ]);
    expect(rows("SELECT value FROM session_meta WHERE key = 'proxy_unauthenticated'")).toEqual([{ value: '1' }]);
  });

  it('records a request whose body or path breaks a parser, with its bodies, and names the parse error', () => {
    const recorded = rows<{ domain: string; path: string; status_code: number; parse_error: string | null; sent: number }>(
      "SELECT n.domain, n.path, n.status_code, n.parse_error, length(b.body) AS sent FROM net_events n JOIN event_body_blobs b ON b.event_id = n.event_id AND b.direction = 'request' WHERE n.decision = 'allowed' ORDER BY n.seq",
    );
    expect(recorded).toEqual([
      {
        domain: 'api.anthropic.com',
        path: '/v1/messages',
        status_code: 200,
        parse_error: expect.stringMatching(/Maximum call stack size exceeded/),
        sent: Buffer.byteLength(DEEP_BODY),
      },
      {
        domain: 'generativelanguage.googleapis.com',
        path: '/v1beta/models/%E0%A4%A:generateContent',
        status_code: 200,
        parse_error: null,
        sent: 15,
      },
    ]);
    expect(rows('SELECT provider, model FROM model_calls')).toEqual([{ provider: 'google', model: '%E0%A4%A' }]);
    const check = runCapsem(home.root, ['check', 'hostile']);
    expect(check.code).toBe(1);
    expect(check.stdout).toContain('FINDING [parse errors] exchanges recorded without what a parser should have derived from them (1)');
    expect(check.stdout).toContain('api.anthropic.com/v1/messages: recording this exchange');
  });
});
