import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppCore } from '../../electron/app/appCore.ts';
import { CallFailure } from '../../electron/app/callFailure.ts';
import { PREVIEW_CHARS } from '../../electron/sessions/eventDetail.ts';
import type { CallError, CallName, CallParams, CallResult, EventName, EventPayload } from '../../electron/contract/appContract.ts';
import type { SessionId } from '../../electron/contract/ids.ts';
import { seedSessions } from '../../electron/dev/seedSessions.ts';
import { SessionEventStore } from '../../electron/sessions/sessionEventStore.ts';
import { openMainDb } from '../../electron/store/mainDb.ts';
import { sessionPaths } from '../../electron/store/paths.ts';
import { registerSession, releaseName } from '../../electron/store/registry.ts';
import { PtyTranscript } from '../../electron/vm/ptyTranscript.ts';
import { VmHost } from '../../electron/vm/vmHost.ts';
import { buildAgent, HostAgentBackend, hostAgentPlan } from '../helpers/hostAgentBackend.ts';
import { bigSession, liveSession, now, recordFileChange } from '../helpers/sessionFixture.ts';
import { freePort } from '../helpers/freePort.ts';
import { tempHome } from '../helpers/tempHome.ts';

// The host core against a seeded store and real session.db files: every call, its validation and
// its error codes; at the end a live session on the real guest agent (run as a host process).

const home = tempHome();
let core: AppCore;
let seeded: { id: SessionId; name: string | null }[];
let big: SessionId;
let gz: SessionId;
const GZ_JSON = { hello: 'world', nested: { list: [1, 2, 3] } };
const LARGE = 'x'.repeat(PREVIEW_CHARS + 1000);

function call<N extends CallName>(name: N, params: CallParams<N>): Promise<CallResult<N>> {
  return core.handle(name, params) as Promise<CallResult<N>>;
}

async function failure(name: string, params: unknown): Promise<CallError> {
  try {
    await core.handle(name, params);
  } catch (err) {
    expect(err).toBeInstanceOf(CallFailure);
    return (err as CallFailure).toCallError();
  }
  throw new Error(`${name} did not fail`);
}

beforeAll(async () => {
  const records = await seedSessions(home, { sessions: 3, events: 300, seed: 7 });
  seeded = records.map((r) => ({ id: r.id, name: r.name }));
  // A session of 100,000 HTTP exchanges, written as the proxy would (one writer, batched).
  big = await bigSession(home, 'big', 100_000, () => ({
    requestHeaders: { accept: '*/*' },
    requestBody: { bytes: Buffer.from('x'.repeat(200)), total: 200, truncated: false },
  }));
  // A session whose response body is stored gzip-encoded (as another tool might have written it).
  const gzSession = await liveSession(home, 'gz');
  gz = gzSession.id;
  const net = gzSession.writer.append('net_events', {
    timestamp: now(),
    domain: 'api.example',
    decision: 'allowed',
    method: 'POST',
    path: '/v1',
    status_code: 200,
    response_headers: '{"content-encoding":"gzip"}',
  })!;
  const encoded = gzipSync(Buffer.from(JSON.stringify(GZ_JSON)));
  gzSession.writer.append('event_body_blobs', {
    event_id: net.eventId!,
    source_table: 'net_events',
    direction: 'response',
    content_type: 'application/json',
    content_encoding: 'gzip',
    original_bytes: encoded.length,
    stored_bytes: encoded.length,
    body: encoded,
    created_at: now(),
  });
  const large = Buffer.from(LARGE);
  gzSession.writer.append('event_body_blobs', {
    event_id: net.eventId!,
    source_table: 'net_events',
    direction: 'request',
    content_type: 'text/plain',
    original_bytes: large.length,
    stored_bytes: large.length,
    body: large,
    created_at: now(),
  });
  await gzSession.end();
  // A recorded terminal for the first seeded session.
  const transcript = new PtyTranscript(sessionPaths(home, seeded[0]!.id).ptyLogPath, { cols: 100, rows: 30 }, 'xterm-256color');
  transcript.output(Buffer.from('$ echo recorded\r\nrecorded\r\n'));
  transcript.close();
  core = new AppCore({ home, checkResults: true, liveIntervalMs: 50 });
}, 120_000);

afterAll(() => {
  core.close();
  home.remove();
});

describe('validation', () => {
  it('refuses an unknown call with bad_call', async () => {
    expect((await failure('sessions.delete', {})).code).toBe('bad_call');
    expect((await failure('__proto__', {})).code).toBe('bad_call');
  });

  it('refuses bad params with bad_params and says what is wrong', async () => {
    const byName = await failure('sessions.info', { id: 'co-work1' });
    expect(byName.code).toBe('bad_params');
    expect(byName.message).toMatch(/session id/);
    expect((await failure('events.page', { id: seeded[0]!.id, kind: 'net', offset: -1, limit: 10 })).code).toBe('bad_params');
    expect((await failure('events.page', { id: seeded[0]!.id, kind: 'net', offset: 0, limit: 10, extra: 1 })).code).toBe('bad_params');
    expect((await failure('sessions.list', 'nonsense')).code).toBe('bad_params');
  });

  it('answers an unknown session id with unknown_session', async () => {
    expect((await failure('sessions.info', { id: '00000000-0000-4000-8000-000000000000' })).code).toBe('unknown_session');
    expect((await failure('events.page', { id: '00000000-0000-4000-8000-000000000000', kind: 'net', offset: 0, limit: 1 })).code).toBe(
      'unknown_session',
    );
  });
});

describe('sessions', () => {
  it('lists every session with id, name, figures and where it is', async () => {
    const list = await call('sessions.list', {});
    expect(list).toHaveLength(5);
    const first = list.find((s) => s.id === seeded[0]!.id)!;
    expect(first.name).toBe(seeded[0]!.name);
    expect(first).toMatchObject({ onDisk: true, live: false, status: 'stopped', resumable: false });
    expect(first.requests).toBeGreaterThan(0);
    expect(first.modelCalls).toBeGreaterThan(0);
    expect(first.durationMs).toBeGreaterThan(0);
    expect(list.find((s) => s.id === big)!.requests).toBe(100_000);
    expect(list.some((s) => s.status === 'crashed')).toBe(true);
    const info = await call('sessions.info', { id: first.id });
    expect(info).toEqual(first);
  });

  it('resolves a name through the one resolver, ids alike', async () => {
    expect(await call('sessions.resolve', { query: seeded[1]!.name! })).toEqual({ id: seeded[1]!.id });
    expect(await call('sessions.resolve', { query: seeded[1]!.id })).toEqual({ id: seeded[1]!.id });
  });

  it('resolves two sessions that once shared a name to the right ids', async () => {
    const db = openMainDb(home);
    const old = registerSession(db, { name: 'shared', mode: 'test' });
    releaseName(db, old.id);
    const current = registerSession(db, { name: 'shared', mode: 'test' });
    db.close();
    expect(await call('sessions.resolve', { query: 'shared' })).toEqual({ id: current.id });
    const db2 = openMainDb(home);
    releaseName(db2, current.id);
    db2.close();
    const ambiguous = await failure('sessions.resolve', { query: 'shared' });
    expect(ambiguous.code).toBe('ambiguous_name');
    expect(ambiguous.candidates?.map((c) => c.id).sort()).toEqual([old.id, current.id].sort());
    const unknown = await failure('sessions.resolve', { query: 'co-work' });
    expect(unknown.code).toBe('unknown_name');
    expect(unknown.candidates).toContainEqual({ id: seeded[0]!.id, name: 'co-work1' });
  });

  it('renames by id and refuses a name another session holds', async () => {
    const renamed = await call('sessions.rename', { id: seeded[2]!.id, name: 'renamed-one' });
    expect(renamed).toMatchObject({ id: seeded[2]!.id, name: 'renamed-one' });
    expect((await call('sessions.info', { id: seeded[2]!.id })).name).toBe('renamed-one');
    expect((await failure('sessions.rename', { id: seeded[2]!.id, name: 'big' })).code).toBe('name_taken');
    expect((await failure('sessions.rename', { id: seeded[2]!.id, name: 'no spaces' })).code).toBe('bad_params');
  });

  it('exports an archive and a HAR file, private, under CAPSEM_HOME/exports', async () => {
    for (const format of ['archive', 'har'] as const) {
      const { path, bytes } = await call('sessions.export', { id: seeded[0]!.id, format });
      expect(path.startsWith(`${home.root}/exports/`)).toBe(true);
      expect(statSync(path).mode & 0o777).toBe(0o600);
      expect(statSync(path).size).toBe(bytes);
    }
  });

  it('says VMs are not available without a VM host (resume, start), and stop needs a running session', async () => {
    expect((await failure('sessions.resume', { id: seeded[0]!.id })).code).toBe('not_available');
    expect((await failure('sessions.start', { name: null, image: 'minimal' })).code).toBe('not_available');
    expect((await failure('sessions.stop', { id: seeded[0]!.id })).code).toBe('not_running');
  });

  it('exports JSONL: one session-api event per line, private', async () => {
    const { path, bytes } = await call('sessions.export', { id: seeded[0]!.id, format: 'jsonl' });
    expect(path.startsWith(`${home.root}/exports/${seeded[0]!.id}-`)).toBe(true);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(path).size).toBe(bytes);
    const lines = readFileSync(path, 'utf8').trimEnd().split('\n');
    const store = SessionEventStore.open(seeded[0]!.id, sessionPaths(home, seeded[0]!.id).dbPath);
    const expected = store.bounds().total;
    store.close();
    expect(lines).toHaveLength(expected);
    const events = lines.map((l) => JSON.parse(l) as { sessionId: string; seq: number });
    expect(events.every((e) => e.sessionId === seeded[0]!.id)).toBe(true);
    expect(events.map((e) => e.seq)).toEqual([...events.map((e) => e.seq)].sort((a, b) => a - b));
  });
});

describe('import', () => {
  function footprint(): { sessions: number; dirs: string[]; staging: boolean } {
    const db = openMainDb(home);
    const sessions = (db.prepare('SELECT count(*) AS n FROM sessions').get() as { n: number }).n;
    db.close();
    return { sessions, dirs: readdirSync(home.sessionsRunDir).sort(), staging: existsSync(join(home.runDir, 'staging')) };
  }

  it('imports an exported archive as a new read-only session that lists and opens', async () => {
    const source = seeded[0]!;
    const { path } = await call('sessions.export', { id: source.id, format: 'archive' });
    const before = (await call('sessions.list', {})).length;
    const imported = await call('sessions.import', { path });
    // Its id is taken here (the original is still in the list), so it gets a new id and a suffixed name.
    expect(imported.id).not.toBe(source.id);
    expect(imported.name).toBe(`${source.name}-2`);
    const list = await call('sessions.list', {});
    expect(list).toHaveLength(before + 1);
    const row = list.find((s) => s.id === imported.id)!;
    const original = list.find((s) => s.id === source.id)!;
    expect(row).toMatchObject({ name: imported.name, status: 'stopped', mode: 'imported', onDisk: true, live: false, resumable: false });
    expect(row.requests).toBe(original.requests);
    expect(row.modelCalls).toBe(original.modelCalls);
    const page = await call('events.page', { id: imported.id as SessionId, kind: 'net', offset: 0, limit: 5 });
    expect(page.total).toBe(original.requests);
    expect(await call('sessions.resolve', { query: imported.name! })).toEqual({ id: imported.id });
    expect(existsSync(join(home.runDir, 'staging'))).toBe(false);
    // Read-only: it ran in no VM here, so there is nothing to resume.
    expect((await failure('sessions.resume', { id: imported.id })).code).toBe('not_available');
  });

  it('refuses a corrupt file with bad_archive and the reason, writing nothing', async () => {
    const dir = join(home.root, 'drops');
    mkdirSync(dir, { recursive: true });
    const { path } = await call('sessions.export', { id: seeded[1]!.id, format: 'archive' });
    const bytes = readFileSync(path);
    // An archive with a byte changed inside a member: its checksum no longer matches.
    const flipped = Buffer.from(bytes);
    flipped[bytes.length >> 1] = flipped[bytes.length >> 1]! ^ 0xff;
    const cases = {
      'flipped.capsem': flipped,
      'truncated.capsem': bytes.subarray(0, bytes.length >> 1),
      'notes.txt': Buffer.from('not a session at all\n'),
    };
    const before = footprint();
    for (const [name, content] of Object.entries(cases)) {
      const file = join(dir, name);
      writeFileSync(file, content);
      const refused = await failure('sessions.import', { path: file });
      expect(refused.code, name).toBe('bad_archive');
      expect(refused.message.length, name).toBeGreaterThan(10);
      expect(footprint(), name).toEqual(before);
    }
    expect((await failure('sessions.import', { path: join(dir, 'missing.capsem') })).code).toBe('not_found');
    expect((await failure('sessions.import', { path: 'relative/file.capsem' })).code).toBe('bad_params');
    expect((await failure('sessions.import', { path: '' })).code).toBe('bad_params');
    expect(footprint()).toEqual(before);
  });
});

describe('events', () => {
  it('pages every view of a seeded session in seq order with a total', async () => {
    const id = seeded[0]!.id;
    for (const kind of ['net', 'model', 'tool', 'file'] as const) {
      const page = await call('events.page', { id, kind, offset: 0, limit: 5 });
      expect(page.total).toBeGreaterThan(0);
      expect(page.rows.length).toBe(Math.min(5, page.total));
      expect(page.rows.map((r) => r.seq)).toEqual([...page.rows.map((r) => r.seq)].sort((a, b) => a - b));
      expect(page.nextOffset).toBe(page.total > 5 ? 5 : null);
    }
    const exec = await call('events.page', { id, kind: 'exec', offset: 0, limit: 5 });
    expect(exec).toEqual({ rows: [], total: 0, nextOffset: null });
    const tools = await call('events.page', { id, kind: 'tool', offset: 0, limit: 50 });
    // An MCP call is the agent's own request to its server, made after the model asked: no model call is its parent.
    expect(tools.rows.every((r) => (typeof r.columns.model_call_seq === 'number') === (r.columns.origin !== 'mcp'))).toBe(true);
    const models = await call('events.page', { id, kind: 'model', offset: 0, limit: 50 });
    expect(models.rows.some((r) => typeof r.columns.cache_read === 'number')).toBe(true);
  });

  it('pages 100,000 rows fast, totals and filters included', async () => {
    const first = await call('events.page', { id: big, kind: 'net', offset: 0, limit: 200 });
    expect(first.total).toBe(100_000);
    expect(first.rows[0]!.columns.path).toBe('/item/0');
    // Timed on a core that does not re-check its results against the contract (the app's setting).
    const plain = new AppCore({ home });
    const t0 = performance.now();
    await plain.handle('events.page', { id: big, kind: 'net', offset: 99_000, limit: 200 });
    const firstMs = performance.now() - t0;
    console.log(`first page of 100,000 rows (opens the file, counts): ${firstMs.toFixed(1)} ms`);
    expect(firstMs).toBeLessThan(200);
    const times: number[] = [];
    for (const offset of [0, 50_000, 99_800, 12_345]) {
      const t = performance.now();
      const page = (await plain.handle('events.page', { id: big, kind: 'net', offset, limit: 200 })) as CallResult<'events.page'>;
      times.push(performance.now() - t);
      expect(page.rows[0]!.columns.path).toBe(`/item/${offset}`);
      expect(page.rows).toHaveLength(200);
    }
    const last = await call('events.page', { id: big, kind: 'net', offset: 99_900, limit: 200 });
    expect(last.rows).toHaveLength(100);
    expect(last.nextOffset).toBeNull();
    console.log(`events.page over 100,000 rows: ${times.map((t) => t.toFixed(1)).join(', ')} ms`);
    expect(Math.max(...times)).toBeLessThan(100);
    const filtered = await call('events.page', { id: big, kind: 'net', offset: 0, limit: 200, filter: 'HOST-7.EXAMPLE' });
    expect(filtered.total).toBe(2000);
    expect(filtered.rows.every((r) => r.columns.domain === 'host-7.example')).toBe(true);
    const denied = await call('events.page', { id: big, kind: 'net', offset: 0, limit: 5000, filter: 'denied' });
    expect(denied.total).toBe(Math.ceil(100_000 / 97));
    await plain.handle('events.page', { id: big, kind: 'net', offset: 0, limit: 200, filter: 'HOST-7.EXAMPLE' });
    const t = performance.now();
    const further = (await plain.handle('events.page', {
      id: big,
      kind: 'net',
      offset: 1000,
      limit: 200,
      filter: 'HOST-7.EXAMPLE',
    })) as CallResult<'events.page'>;
    const filteredMs = performance.now() - t;
    console.log(`a further filtered page (matches counted once): ${filteredMs.toFixed(1)} ms`);
    expect(further.rows[0]!.columns.path).toBe(`/item/${1000 * 50 + 7}`);
    expect(filteredMs).toBeLessThan(100);
    plain.close();
    const literal = await call('events.page', { id: big, kind: 'net', offset: 0, limit: 10, filter: '%' });
    expect(literal.total).toBe(0);
  });

  it('details a model call: fields, headers, pretty bodies, items, the exchange that carried it', async () => {
    const id = seeded[0]!.id;
    const model = (await call('events.page', { id, kind: 'model', offset: 0, limit: 1 })).rows[0]!;
    const detail = await call('events.detail', { id, kind: 'model', seq: model.seq });
    expect(detail.eventId).toBe(model.eventId);
    expect(detail.fields.provider).toBe(model.columns.provider);
    expect(detail.items.length).toBeGreaterThan(0);
    expect(detail.netSeq).toBeTypeOf('number');
    expect(detail.bodies.map((b) => b.direction)).toEqual(['request', 'response']);
    expect(detail.bodies[0]!.preview).toMatch(/^\{\n {2}"/);
    expect(detail.bodies[0]!.complete).toBe(true);
    const net = await call('events.detail', { id, kind: 'net', seq: detail.netSeq! });
    expect(net.requestHeaders).toMatchObject({ 'content-type': 'application/json' });
    const tool = (await call('events.page', { id, kind: 'tool', offset: 0, limit: 1 })).rows[0]!;
    const toolDetail = await call('events.detail', { id, kind: 'tool', seq: tool.seq });
    expect(toolDetail.modelCallSeq).toBe(tool.columns.model_call_seq);
    expect((await failure('events.detail', { id, kind: 'net', seq: 999_999 })).code).toBe('unknown_event');
  });

  it('decodes a gzip body and pretty-prints it; a large body comes in slices', async () => {
    const row = (await call('events.page', { id: gz, kind: 'net', offset: 0, limit: 1 })).rows[0]!;
    const detail = await call('events.detail', { id: gz, kind: 'net', seq: row.seq });
    const response = detail.bodies.find((b) => b.direction === 'response')!;
    expect(response).toMatchObject({ contentEncoding: 'gzip', complete: true, preview: JSON.stringify(GZ_JSON, null, 2) });
    const request = detail.bodies.find((b) => b.direction === 'request')!;
    expect(request.complete).toBe(false);
    expect(request.preview).toHaveLength(PREVIEW_CHARS);
    const rest = await call('events.body', { id: gz, eventId: row.eventId, direction: 'request', offset: PREVIEW_CHARS, length: 1 << 20 });
    expect(rest).toEqual({ text: 'x'.repeat(1000), offset: PREVIEW_CHARS, total: LARGE.length });
    expect((await failure('events.body', { id: gz, eventId: 'ffffffffffff', direction: 'request', offset: 0, length: 10 })).code).toBe(
      'unknown_event',
    );
  });

  it('gives the timeline, the cost by model and search hits', async () => {
    const id = seeded[0]!.id;
    const timeline = await call('sessions.timeline', { id });
    expect(timeline.turns.length).toBeGreaterThan(0);
    expect(timeline.hosts.length).toBeGreaterThan(0);
    expect(timeline.start! <= timeline.end!).toBe(true);
    const cost = await call('sessions.cost', { id });
    const info = await call('sessions.info', { id });
    expect(cost.byModel.reduce((s, m) => s + m.calls, 0)).toBe(info.modelCalls);
    expect(cost.cumulative).toHaveLength(info.modelCalls);
    expect(cost.cumulative.at(-1)!.costUsd).toBeCloseTo(info.costUsd, 6);
    expect(cost.byModel.some((m) => m.cacheReadTokens > 0)).toBe(true);
    const hits = await call('sessions.search', { id, query: 'RETRY BUDGET' });
    expect(hits.length).toBeGreaterThan(0);
    expect(hits.length).toBeLessThanOrEqual(200);
    expect(hits.every((h) => h.snippet.toLowerCase().includes('retry budget'))).toBe(true);
    expect(await call('sessions.search', { id, query: 'no-such-text-anywhere' })).toEqual([]);
  });

  it('tells the conversation a page at a time, finds the turn of a search hit, and completes a text it cut', async () => {
    const id = seeded[0]!.id;
    const info = await call('sessions.info', { id });
    const first = await call('sessions.conversation', { id, offset: 0, limit: 5 });
    expect(first.total).toBe(info.modelCalls);
    expect(first.turns.map((t) => t.index)).toEqual([0, 1, 2, 3, 4]);
    const hit = (await call('sessions.search', { id, query: 'RETRY BUDGET' })).find((h) => h.kind === 'model')!;
    const { index } = await call('sessions.conversationFind', { id, seq: hit.seq, kind: 'model' });
    const held = await call('sessions.conversation', { id, offset: index!, limit: 1 });
    expect(held.turns[0]!.link).toEqual({ kind: 'model', seq: hit.seq });
    const cut = first.turns.map((t) => t.prompt).find((p) => p !== null && !p.complete)!;
    const whole = await call('sessions.conversationText', { id, source: cut.source, rowId: cut.rowId, offset: 0, length: cut.total });
    expect(whole.text.startsWith(cut.head)).toBe(true);
    expect(whole.text.length).toBe(cut.total);
    expect((await failure('sessions.conversation', { id, offset: 0, limit: 201 })).code).toBe('bad_params');
    expect((await failure('sessions.conversationText', { id, source: 'item', rowId: 999_999, offset: 0, length: 1 })).code).toBe(
      'unknown_event',
    );
  });
});

describe('terminal and live updates without VMs', () => {
  it('gives an ended session its transcript', async () => {
    const attached = await call('terminal.attach', { id: seeded[0]!.id, size: { cols: 80, rows: 24 } });
    expect(attached.live).toBe(false);
    expect(attached.transcript).toMatchObject({ width: 100, height: 30 });
    expect(attached.transcript!.events.map((e) => e[2]).join('')).toContain('recorded');
    const none = await call('terminal.attach', { id: seeded[1]!.id, size: { cols: 80, rows: 24 } });
    expect(none.transcript).toEqual({ width: 80, height: 24, events: [], next: null });
    expect((await failure('terminal.input', { id: seeded[0]!.id, data: 'x' })).code).toBe('not_attached');
    expect(await call('terminal.detach', { id: seeded[0]!.id })).toEqual({});
  });

  it('sends session.changed on a rename and session.events when a followed session gets rows', async () => {
    const live = await liveSession(home, 'growing');
    const got: { name: EventName; payload: unknown }[] = [];
    const off = core.subscribe(<N extends EventName>(name: N, payload: EventPayload<N>) => void got.push({ name, payload }));
    await call('live.subscribe', { id: live.id });
    core.pollNow();
    expect(got).toEqual([]);
    await call('sessions.rename', { id: seeded[1]!.id, name: 'moved-on' });
    recordFileChange(live, 'a.txt', { size: 1 });
    await live.writer.flush();
    core.pollNow();
    const changed = got.filter((e) => e.name === 'session.changed').map((e) => (e.payload as EventPayload<'session.changed'>).session);
    expect(changed.find((s) => s.id === seeded[1]!.id)?.name).toBe('moved-on');
    // The running session's figures moved too (read from its live session.db).
    expect(changed.find((s) => s.id === live.id)?.fileEvents).toBe(1);
    const events = got.filter((e) => e.name === 'session.events').map((e) => e.payload as EventPayload<'session.events'>);
    expect(events).toEqual([{ id: live.id, kinds: ['file'], lastSeq: 1 }]);
    got.length = 0;
    core.pollNow();
    expect(got).toEqual([]);
    off();
    await live.end();
  });
});

const agentMissing = buildAgent();

describe.skipIf(agentMissing !== null)(`a live session with the real agent${agentMissing ? ` (skipped: ${agentMissing})` : ''}`, () => {
  it('starts a session, echoes typed input through terminal.output, stops it, then replays it', async () => {
    const workspace = join(home.root, 'live-ws');
    mkdirSync(workspace, { recursive: true });
    const proxyPort = await freePort();
    const vmHost = new VmHost({
      home,
      backend: () => new HostAgentBackend(workspace),
      plan: () => async (_paths, caPem) => hostAgentPlan(workspace, proxyPort, caPem),
    });
    const liveCore = new AppCore({ home, vmHost, checkResults: true });
    const output: string[] = [];
    const screens: string[] = [];
    const exits: EventPayload<'terminal.exit'>[] = [];
    const starting: EventPayload<'session.starting'>[] = [];
    liveCore.subscribe(<N extends EventName>(name: N, payload: EventPayload<N>) => {
      if (name === 'terminal.output') output.push((payload as EventPayload<'terminal.output'>).data);
      if (name === 'terminal.screen') screens.push((payload as EventPayload<'terminal.screen'>).data);
      if (name === 'terminal.exit') exits.push(payload as EventPayload<'terminal.exit'>);
      if (name === 'session.starting') starting.push(payload as EventPayload<'session.starting'>);
    });
    const waitFor = async (text: string): Promise<void> => {
      const deadline = Date.now() + 10_000;
      while (!output.join('').includes(text) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(output.join('')).toContain(text);
    };
    try {
      // The id comes back as soon as the session is entered; the list says it is starting.
      const { id } = (await liveCore.handle('sessions.start', { name: 'live-one', image: 'minimal' })) as CallResult<'sessions.start'>;
      const info = (await liveCore.handle('sessions.info', { id })) as CallResult<'sessions.info'>;
      expect(info).toMatchObject({ id, name: 'live-one', status: 'running', live: false, starting: { phase: 'boot' } });
      // Attaching waits for the start, then the terminal is live, its (new) screen sent first.
      const attached = (await liveCore.handle('terminal.attach', { id, size: { cols: 90, rows: 20 } })) as CallResult<'terminal.attach'>;
      expect(attached).toEqual({ live: true, transcript: null });
      expect(starting.at(0)).toMatchObject({ id, state: 'progress', progress: { phase: 'boot' } });
      expect(starting.at(-1)).toEqual({ id, state: 'ready', progress: null, message: null });
      expect((await liveCore.handle('sessions.info', { id })) as CallResult<'sessions.info'>).toMatchObject({
        live: true,
        onDisk: true,
        starting: null,
      });
      expect(screens).toEqual(['']);
      await liveCore.handle('terminal.resize', { id, size: { cols: 100, rows: 30 } });
      await liveCore.handle('terminal.input', { id, data: 'echo "answer-$((40 + 2))"\n' });
      await waitFor('answer-42');
      // Attached again (the tab reopened, the page reloaded): the screen comes back as it was.
      await liveCore.handle('terminal.detach', { id });
      await liveCore.handle('terminal.attach', { id, size: { cols: 100, rows: 30 } });
      expect(screens).toHaveLength(2);
      expect(screens[1]).toContain('answer-42');
      expect(screens[1]).toContain('echo "answer-$((40 + 2))"');
      await liveCore.handle('terminal.detach', { id });
      expect((await liveCore.handle('sessions.stop', { id })) as CallResult<'sessions.stop'>).toEqual({ status: 'stopped' });
      const ended = (await liveCore.handle('sessions.info', { id })) as CallResult<'sessions.info'>;
      // A named VM session is kept for resuming.
      expect(ended).toMatchObject({ status: 'stopped', live: false, resumable: true });
      const replay = (await liveCore.handle('terminal.attach', { id, size: { cols: 80, rows: 24 } })) as CallResult<'terminal.attach'>;
      expect(replay.live).toBe(false);
      expect(replay.transcript!.events.map((e) => e[2]).join('')).toContain('answer-42');
      // The window detached before the stop, so no exit is reported for a terminal nobody shows.
      expect(exits).toEqual([]);

      // Resume boots it again under the same id; its terminal is live again.
      expect((await liveCore.handle('sessions.resume', { id })) as CallResult<'sessions.resume'>).toEqual({ id });
      expect(((await liveCore.handle('terminal.attach', { id, size: { cols: 90, rows: 20 } })) as CallResult<'terminal.attach'>).live).toBe(
        true,
      );
      expect((await liveCore.handle('sessions.info', { id })) as CallResult<'sessions.info'>).toMatchObject({
        status: 'running',
        live: true,
        resumable: true,
      });
      output.length = 0;
      await liveCore.handle('terminal.input', { id, data: 'echo "again-$((40 + 3))"\n' });
      await waitFor('again-43');
      await liveCore.handle('terminal.detach', { id });
      await liveCore.handle('sessions.stop', { id });
    } finally {
      await vmHost.stopAll();
      liveCore.close();
    }
  }, 60_000);
});
