import Database from 'better-sqlite3';
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asSessionId } from '../../electron/contract/ids.ts';
import { findOwner } from '../../electron/owner/ownership.ts';
import { openMainDb } from '../../electron/store/mainDb.ts';
import type { CapsemHome } from '../../electron/store/paths.ts';
import { getSession } from '../../electron/store/registry.ts';
import { probeAccelerator } from '../../electron/vm/accel.ts';
import { guestCryptoEnv } from '../../electron/vm/guestCrypto.ts';
import { findQemu, QemuBackend } from '../../electron/vm/qemuBackend.ts';
import { ABANDONED_REASON } from '../../electron/store/abandonedSessions.ts';
import { VmHost } from '../../electron/vm/vmHost.ts';
import type { VmSession } from '../../electron/vm/vmSession.ts';
import { json, startUpstream, type Upstream } from '../helpers/mockUpstreams.ts';
import { copyPackageClosure } from '../helpers/guestPackages.ts';
import { runCapsemAsync, USER_FOLDER } from '../helpers/runCapsem.ts';
import { tempHome } from '../helpers/tempHome.ts';
import { agentImageUnavailable, guestRun, startAgentVm, vmTestHome, vmUnavailable } from '../helpers/vmTestHome.ts';

// Real VMs (TCG on machines without usable KVM), one at a time, few and purposeful: what a user
// sees from `capsem run`, the terminal, the workspace, a crash, an owner going away, and a second
// command going through a running owner. The agent image's network path is at the end.

const noVm = vmUnavailable();
const noAgentImage = agentImageUnavailable();
const BIN = fileURLToPath(new URL('../../bin/capsem.mjs', import.meta.url));

function vmProcesses(home: string): number[] {
  const out = spawnSync('pgrep', ['-f', home], { encoding: 'utf8' }).stdout.trim();
  return out === ''
    ? []
    : out
        .split('\n')
        .map(Number)
        .filter((pid) => {
          const cmd = spawnSync('cat', [`/proc/${pid}/cmdline`], { encoding: 'utf8' }).stdout;
          return /qemu-system|virtiofsd/.test(cmd);
        });
}

function rows<T>(dbPath: string, sql: string): T[] {
  const db = new Database(dbPath, { readonly: true });
  try {
    return db.prepare(sql).all() as T[];
  } finally {
    db.close();
  }
}

async function until<T>(what: string, probe: () => T | null | undefined | Promise<T | null | undefined>, timeoutMs = 60_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function statusOf(home: CapsemHome, id: string) {
  const db = openMainDb(home);
  try {
    return getSession(db, asSessionId(id));
  } finally {
    db.close();
  }
}

describe.skipIf(noVm !== null)(`real VM, minimal image${noVm ? ` (skipped: ${noVm})` : ''}`, () => {
  const home = vmTestHome();
  let host: VmHost;
  let session: VmSession;
  afterAll(async () => {
    await host?.stopAll();
    home.remove();
  });

  it('capsem run boots, streams the output and exits with the command code, leaving no VM process behind', async () => {
    const r = await runCapsemAsync(home.root, [
      'run',
      '--image',
      'minimal',
      '--name',
      'boot1',
      '--',
      'sh',
      '-c',
      'echo hello from $(uname -s); echo oops >&2; exit 7',
    ]);
    expect(r.stdout).toBe('hello from Linux\n');
    expect(r.stderr).toContain('oops');
    expect(r.stderr).toMatch(/TCG|KVM/);
    expect(r.code).toBe(7);
    expect(vmProcesses(home.root)).toEqual([]);
    const list = await runCapsemAsync(home.root, ['list', '--json']);
    const sessions = JSON.parse(list.stdout) as { name: string; status: string; id: string }[];
    expect(sessions.find((s) => s.name === 'boot1')).toMatchObject({ status: 'stopped' });
  }, 180_000);

  it('gives a terminal that echoes typed input and follows a resize', async () => {
    host = new VmHost({ home, backend: () => new QemuBackend(findQemu()!) });
    session = await host.start({ name: null, image: 'minimal', command: ['test'] }, { status: () => {}, progress: () => {} });
    const pty = session.attachPty({ cols: 80, rows: 24 });
    let seen = '';
    pty.stream.on('data', (c: Buffer) => (seen += c.toString()));
    pty.stream.write('echo typed-$((40+2))\n');
    await until('the echo', () => seen.includes('typed-42'), 30_000);
    pty.resize(120, 40);
    pty.stream.write('stty size\n');
    await until('the new size', () => seen.includes('40 120'), 30_000);
  }, 180_000);

  it('records create, modify and delete in the shared workspace as fs_events', async () => {
    const settle = () => new Promise((r) => setTimeout(r, 600));
    for (const command of ['mkdir -p notes && echo one > notes/a.txt', 'echo two >> notes/a.txt', 'rm notes/a.txt']) {
      expect((await session.exec(['sh', '-c', command]).result).code).toBe(0);
      await settle();
    }
    await session.recording.flush();
    const events = rows<{ action: string; path: string; size: number | null }>(
      session.paths.dbPath,
      "SELECT action, path, size FROM fs_events WHERE path = 'notes/a.txt' ORDER BY seq",
    );
    expect(events).toEqual([
      { action: 'created', path: 'notes/a.txt', size: 4 },
      { action: 'modified', path: 'notes/a.txt', size: 8 },
      { action: 'deleted', path: 'notes/a.txt', size: null },
    ]);
  }, 60_000);

  it('marks the session crashed, with the reason, and rolls it up when QEMU is killed', async () => {
    const [qemu] = vmProcesses(home.root).filter((pid) => /qemu-system/.test(readFileSync(`/proc/${pid}/cmdline`, 'utf8')));
    expect(qemu).toBeDefined();
    process.kill(qemu!, 'SIGKILL');
    const end = await session.ended;
    expect(end).toEqual({ status: 'crashed', reason: expect.stringMatching(/QEMU exited \(killed by SIGKILL\)/) });
    expect(statusOf(home, session.id)).toMatchObject({ status: 'crashed', statusReason: end.reason });
    await until('virtiofsd to go', () => vmProcesses(home.root).length === 0, 10_000);
  }, 60_000);

  it('capsem shell gives an interactive shell in a new VM and exits with its code', async () => {
    const child = spawn(process.execPath, [BIN, 'shell', '--image', 'minimal'], {
      cwd: USER_FOLDER,
      env: { ...process.env, CAPSEM_HOME: home.root },
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.resume();
    await until('the shell prompt', () => out.length > 0, 120_000);
    child.stdin.write('echo shell-$((1+1))\n');
    await until('the echo', () => out.includes('shell-2'), 30_000);
    child.stdin.write('exit 3\n');
    const code = await new Promise<number | null>((r) => child.once('exit', r));
    expect(code).toBe(3);
    await until('the VM to end', () => vmProcesses(home.root).length === 0, 15_000);
  }, 180_000);

  it('capsem stop ends a running session by the start of its id as the window shows it, in order', async () => {
    const run = spawn(process.execPath, [BIN, 'run', '--image', 'minimal', '--name', 'stopme', '--', 'sleep', '600'], {
      cwd: USER_FOLDER,
      env: { ...process.env, CAPSEM_HOME: home.root },
      stdio: 'ignore',
    });
    const runExit = new Promise<number | null>((r) => run.once('exit', r));
    const id = await until(
      'the VM',
      async () => {
        const found = await findOwner(home);
        if (!found) return null;
        const live = (await found.client.call('vm.list')) as { id: string; name: string | null }[];
        found.client.close();
        return live.find((s) => s.name === 'stopme')?.id;
      },
      120_000,
    );
    const stopped = await runCapsemAsync(home.root, ['stop', id.slice(0, 8)]);
    expect(stopped.stdout).toBe(`stopped ${id} (stopme)\n`);
    // The command was ended by SIGTERM in the guest: 128 + 15, as a shell reports it.
    expect(await runExit).toBe(143);
    expect(statusOf(home, id)).toMatchObject({ status: 'stopped' });
    expect(vmProcesses(home.root)).toEqual([]);
    const again = await runCapsemAsync(home.root, ['stop', 'stopme']);
    expect(again.stderr).toMatch(/is not running/);
    expect(again.code).toBe(1);
  }, 180_000);

  it('a killed owner takes its VM with it, and the next command cleans up and marks that session crashed', async () => {
    const owner = spawn(process.execPath, [BIN, 'run', '--image', 'minimal', '--name', 'orphan', '--', 'sleep', '600'], {
      cwd: USER_FOLDER,
      env: { ...process.env, CAPSEM_HOME: home.root },
      stdio: 'ignore',
    });
    const id = await until(
      'the VM',
      async () => {
        const found = await findOwner(home);
        if (!found) return null;
        const live = (await found.client.call('vm.list')) as { id: string; name: string | null }[];
        found.client.close();
        return live.find((s) => s.name === 'orphan')?.id;
      },
      120_000,
    );
    owner.kill('SIGKILL');
    await until('QEMU and virtiofsd to die with their owner', () => vmProcesses(home.root).length === 0, 15_000);
    // Read as a file, not opened as Capsem opens main.db: that would end the session itself once
    // this process has reaped the killed owner, and the next command is the one under test.
    const raw = new Database(home.mainDbPath, { readonly: true });
    expect(raw.prepare('SELECT status FROM sessions WHERE id = ?').get(id)).toEqual({ status: 'running' });
    raw.close();
    const next = await runCapsemAsync(home.root, ['run', '--image', 'minimal', '--', 'true']);
    expect(next.code).toBe(0);
    expect(next.stderr).toMatch(/took over .* which is no longer running/);
    expect(next.stderr).toMatch(/cleaned up after an earlier run that was killed: \d+ process\(es\), 1 session\(s\) marked crashed/);
    expect(statusOf(home, id)).toMatchObject({ status: 'crashed', statusReason: ABANDONED_REASON });
  }, 240_000);

  it('capsem run keeps its memory flat while nothing reads its output, and stops the VM in order when the reader goes away', async () => {
    const run = spawn(process.execPath, [BIN, 'run', '--image', 'minimal', '--name', 'flood', '--', 'cat', '/dev/zero'], {
      cwd: USER_FOLDER,
      env: { ...process.env, CAPSEM_HOME: home.root },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    // Its stdout is a pipe this test never reads: it fills, then stays full, as under `| sleep 60`.
    let stderr = '';
    run.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise<number | null>((r) => run.once('exit', r));
    try {
      await until('the command to start', () => /capsem: session /.test(stderr), 120_000);
      const rssMiB = (): number => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${run.pid}/status`, 'utf8'))![1]) / 1024;
      // Held while stalled: a mux window, the control socket's backlog bound, a stdout chunk, under
      // 5 MiB; the bound leaves room for the garbage collector's drift. Unpaced, the process grew
      // about 42 MiB/s with the guest's output: over 800 MiB in these 20 s.
      const GROWTH_BOUND_MIB = 32;
      await new Promise((r) => setTimeout(r, 3000));
      const first = rssMiB();
      let highest = first;
      for (let second = 0; second < 20 && highest - first < GROWTH_BOUND_MIB; second++) {
        await new Promise((r) => setTimeout(r, 1000));
        highest = Math.max(highest, rssMiB());
      }
      expect(highest - first).toBeLessThan(GROWTH_BOUND_MIB);

      run.stdout.destroy();
      expect(await exited).toBe(141);
      expect(stderr).toContain('capsem: nothing reads the output any more; stopping');
      expect(stderr).not.toMatch(/EPIPE|\n\s+at |started through this process by other commands/);
      expect(vmProcesses(home.root)).toEqual([]);
      const list = await runCapsemAsync(home.root, ['list', '--json']);
      expect((JSON.parse(list.stdout) as { name: string; status: string }[]).find((s) => s.name === 'flood')).toMatchObject({
        status: 'stopped',
      });
    } finally {
      // A failed expectation leaves the flood running: told to go, the owner stops its VM first.
      if (run.exitCode === null && run.signalCode === null) {
        run.kill('SIGTERM');
        await exited;
      }
    }
  }, 240_000);

  it('sends a second capsem run through the running owner, and leaves no VM process when the owner is stopped', async () => {
    const owner = spawn(process.execPath, [BIN, 'run', '--image', 'minimal', '--', 'sleep', '600'], {
      cwd: USER_FOLDER,
      env: { ...process.env, CAPSEM_HOME: home.root },
      stdio: 'ignore',
    });
    const running = await until(
      'the first VM',
      async () => {
        const found = await findOwner(home);
        if (!found) return null;
        const live = (await found.client.call('vm.list')) as { id: string }[];
        found.client.close();
        return live.length === 1 ? found.info : null;
      },
      120_000,
    );
    expect(running.pid).toBe(owner.pid);
    const secondRun = runCapsemAsync(home.root, ['run', '--image', 'minimal', '--', 'sh', '-c', 'echo second; cat /proc/1/comm; sleep 3']);
    // While it runs, the owner (the first command) hosts both VMs.
    await until(
      'the owner to host the second VM too',
      async () => {
        const found = await findOwner(home);
        if (!found) return null;
        const live = (await found.client.call('vm.list')) as unknown[];
        found.client.close();
        return found.info.pid === owner.pid && live.length === 2;
      },
      120_000,
    );
    const second = await secondRun;
    expect(second.stdout).toBe('second\ncapsem-agent\n');
    expect(second.code).toBe(0);
    owner.kill('SIGTERM');
    await new Promise((r) => owner.once('exit', r));
    await until('every VM process to end', () => vmProcesses(home.root).length === 0, 15_000);
  }, 300_000);
});

/** A package and everything it depends on, copied into `dest/node_modules`, for Node in the guest. */
describe.skipIf(noAgentImage !== null)(`real VM, agent image: the network path${noAgentImage ? ` (skipped: ${noAgentImage})` : ''}`, () => {
  const home = vmTestHome();
  const API = 'api.anthropic.com';
  const OTHER = 'files.guest-test.example';
  let upstream: Upstream;
  let host: VmHost;
  let session: VmSession;

  const run = (argv: string[]) => guestRun(session, argv);

  beforeAll(async () => {
    const upHome = tempHome();
    upstream = await startUpstream(upHome, [API, OTHER], (req, body, res) => {
      if (req.url === '/v1/messages') {
        return json(res, 200, {
          id: 'msg_guest_1',
          type: 'message',
          role: 'assistant',
          model: (body as { model: string }).model,
          content: [{ type: 'text', text: 'Hello from the local upstream.' }],
          stop_reason: 'end_turn',
          stop_sequence: null,
          usage: { input_tokens: 321, output_tokens: 12, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
        });
      }
      json(res, 200, { path: req.url });
    });
    upHome.remove();
    writeFileSync(
      join(home.root, 'policy.json'),
      JSON.stringify({
        version: 1,
        rules: [
          { id: 'test.deny-blocked', action: 'deny', domains: ['blocked.example'] },
          { id: 'test.allow', action: 'allow', domains: ['*'] },
        ],
        privateAddresses: 'deny',
      }),
    );
    ({ host, session } = await startAgentVm(home, upstream, [API, OTHER]));
  }, 900_000);
  afterAll(async () => {
    await host?.stopAll();
    await upstream?.close();
    home.remove();
  });

  it('carries curl in the guest through the proxy to an HTTPS host, recorded with process_name curl; a denied domain gets 403', async () => {
    expect((await run(['curl', '-sS', `https://${OTHER}/v1/hello`])).out).toBe(JSON.stringify({ path: '/v1/hello' }));
    expect((await run(['curl', '-sS', '-o', '/dev/null', '-w', '%{http_code}', 'https://blocked.example/'])).out).toBe('403');
    await session.recording.flush();
    const net = rows<{ domain: string; process_name: string; status_code: number; decision: string; matched_rule: string }>(
      session.paths.dbPath,
      "SELECT domain, process_name, status_code, decision, matched_rule FROM net_events WHERE process_name = 'curl' ORDER BY seq",
    );
    expect(net).toEqual([
      { domain: OTHER, process_name: 'curl', status_code: 200, decision: 'allowed', matched_rule: 'test.allow' },
      { domain: 'blocked.example', process_name: 'curl', status_code: 403, decision: 'denied', matched_rule: 'test.deny-blocked' },
    ]);
  }, 120_000);

  it("gives the guest's TLS the fastest path for its CPU: ChaCha20 from the proxy and scalar OpenSSL under TCG, AES-GCM under KVM", async () => {
    const accel = probeAccelerator().accel;
    const curl = await run(['curl', '-sSv', '-o', '/dev/null', `https://${OTHER}/v1/cipher`]);
    expect(curl.code).toBe(0);
    expect(curl.err).toContain(
      `SSL connection using TLSv1.3 / ${accel === 'tcg' ? 'TLS_CHACHA20_POLY1305_SHA256' : 'TLS_AES_128_GCM_SHA256'}`,
    );
    expect((await run(['sh', '-c', 'printf %s "$OPENSSL_ia32cap"'])).out).toBe(guestCryptoEnv(accel).OPENSSL_ia32cap ?? '');
  });

  it('resumes a named session on its own disk: a file written outside the workspace is still there', async () => {
    const quiet = { status: () => {}, progress: () => {} };
    const first = await host.start({ name: 'keeper', image: 'agent', command: ['test'] }, quiet);
    expect((await first.exec(['sh', '-c', 'echo kept > /root/kept.txt && sync']).result).code).toBe(0);
    await first.stop();
    const again = await host.resume(first.id, quiet);
    expect(again.id).toBe(first.id);
    const { stream, result } = again.exec(['cat', '/root/kept.txt']);
    let out = '';
    stream.on('data', (c: Buffer) => (out += c.toString()));
    expect((await result).code).toBe(0);
    expect(out).toBe('kept\n');
    await again.stop();
  }, 240_000);

  it("runs the official @anthropic-ai/sdk on the guest's node through the proxy, and the call lands in model_calls with its tokens", async () => {
    copyPackageClosure('@anthropic-ai/sdk', session.paths.workspaceDir);
    writeFileSync(
      join(session.paths.workspaceDir, 'ask.cjs'),
      `
const Anthropic = require('@anthropic-ai/sdk');
const client = new Anthropic({ apiKey: 'sk-ant-guest-test' });
client.messages.create({ model: 'claude-sonnet-4-6', max_tokens: 64, messages: [{ role: 'user', content: 'Say hello.' }] })
  .then((m) => console.log(JSON.stringify({ text: m.content[0].text, usage: m.usage })), (e) => { console.error(String(e)); process.exit(1); });
`,
    );
    const r = await run(['node', 'ask.cjs']);
    expect(r.err).toBe('');
    expect(JSON.parse(r.out)).toMatchObject({ text: 'Hello from the local upstream.', usage: { input_tokens: 321, output_tokens: 12 } });
    await session.recording.flush();
    const calls = rows<{
      provider: string;
      model: string;
      input_tokens: number;
      output_tokens: number;
      process_name: string;
      estimated_cost_usd: number;
    }>(session.paths.dbPath, 'SELECT provider, model, input_tokens, output_tokens, process_name, estimated_cost_usd FROM model_calls');
    expect(calls).toEqual([
      {
        provider: 'anthropic',
        model: 'claude-sonnet-4-6',
        input_tokens: 321,
        output_tokens: 12,
        process_name: 'node',
        estimated_cost_usd: expect.any(Number),
      },
    ]);
    expect(calls[0]!.estimated_cost_usd).toBeGreaterThan(0);
    // The request reached the upstream from the guest's own Node (Debian's), with the key it was given.
    const sent = upstream.requests.find((q) => q.path === '/v1/messages')!;
    expect(sent.headers).toMatchObject({ authorization: 'Bearer sk-ant-guest-test', 'x-stainless-runtime': 'node' });
    expect(sent.headers['x-stainless-runtime-version']).not.toBe(process.version);
  }, 180_000);
});
