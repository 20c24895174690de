import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { runCapsem, USER_FOLDER } from './runCapsem.ts';

// Looking for a real key where it must not be: every shape a reflection could give it (as it is,
// percent-encoded, base64 and base64url at each alignment), in raw bytes (files read without
// opening them as databases, so a WAL is read as it lies), in each export and in what the session
// events API answers.

/** A test key `length` characters long, as long as the provider's own, so its stand-in (as long as the key) has the provider's shape. */
export function keyOfLength(prefix: string, length: number, suffix = ''): string {
  return `${prefix}REAL${randomBytes(length).toString('hex')}`.slice(0, length - suffix.length) + suffix;
}

/** The byte strings that give a key away: itself, its percent-encodings, and the part of its base64 made of its bits alone, at each alignment. */
export function keyTraces(key: string): string[] {
  const component = encodeURIComponent(key);
  const traces = [key, component, component.replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase())];
  for (const pad of ['', 'a', 'ab']) {
    const encoded = Buffer.from(pad + key).toString('base64');
    const core = encoded.slice(Math.ceil((8 * pad.length) / 6), Math.floor((8 * (pad.length + Buffer.byteLength(key))) / 6));
    traces.push(core, core.replace(/\+/g, '-').replace(/\//g, '_'));
  }
  return [...new Set(traces)];
}

/** `provider in where` for each trace of each key found in `bytes`. */
export function tracesIn(bytes: Buffer, keys: Readonly<Record<string, string>>, where: string): string[] {
  return Object.entries(keys).flatMap(([provider, key]) =>
    keyTraces(key)
      .filter((trace) => bytes.includes(trace))
      .map((trace) => `${provider} (${trace === key ? 'as it is' : trace.slice(0, 12)}…) in ${where}`),
  );
}

export function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(join(dir, e.name)) : e.isFile() ? [join(dir, e.name)] : [],
  );
}

/** Traces of the keys in each file, read as raw bytes (and inflated too when it is gzip, as an archive may be). */
export function tracesInFiles(files: readonly string[], keys: Readonly<Record<string, string>>): string[] {
  return files.flatMap((file) => {
    const bytes = readFileSync(file);
    const gzip = bytes[0] === 0x1f && bytes[1] === 0x8b;
    return [...tracesIn(bytes, keys, file), ...(gzip ? tracesIn(gunzipSync(bytes), keys, `${file} (inflated)`) : [])];
  });
}

/** The session exported in each format into `dir`; the files made. */
export function exportAll(home: string, session: string, dir: string): string[] {
  return (['archive', 'har', 'jsonl'] as const).map((format) => {
    const out = join(dir, `${session}.${format}`);
    const run = runCapsem(home, ['export', session, '-o', out, '--format', format]);
    if (run.code !== 0) throw new Error(`capsem export ${format} failed: ${run.stderr}`);
    return out;
  });
}

/** Everything `capsem api` answers about a session: its events page, each event raw, its timeline, and the session list. */
export async function sessionApiAnswers(home: string, id: string): Promise<string> {
  const bin = new URL('../../bin/capsem.mjs', import.meta.url).pathname;
  const api = spawn(process.execPath, [bin, 'api', '--port', '0'], {
    cwd: USER_FOLDER,
    env: { ...process.env, CAPSEM_HOME: home },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      api.stdout.on('data', (c: Buffer) => {
        out += c.toString();
        if (out.includes('\n')) resolve(out.split('\n')[0]!.slice('Capsem API: '.length));
      });
      api.on('exit', (code) => reject(new Error(`capsem api exited ${code}`)));
    });
    const answers: string[] = [];
    const get = async (path: string): Promise<string> => {
      const text = await (await fetch(`${url}${path}`)).text();
      answers.push(text);
      return text;
    };
    const events = JSON.parse(await get(`/v1/sessions/${id}?limit=500`)) as { events: { seq: number }[] };
    if (events.events.length === 0) throw new Error('the API answered no events for the session');
    for (const event of events.events) await get(`/v1/sessions/${id}/events/${event.seq}?raw=1`);
    await get(`/v1/sessions/${id}/timeline`);
    await get('/v1/sessions');
    return answers.join('\n');
  } finally {
    api.kill('SIGTERM');
  }
}
