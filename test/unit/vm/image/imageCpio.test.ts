import { expect, it } from 'vitest';
import { writeNewc } from '../../../../electron/vm/image/imageCpio.ts';

interface Parsed {
  name: string;
  mode: number;
  uid: number;
  rdevMajor: number;
  rdevMinor: number;
  data: string;
}

// A reader for the fields the kernel uses, enough to check what the writer wrote.
function readNewc(buf: Buffer): Parsed[] {
  const out: Parsed[] = [];
  let at = 0;
  const align = (n: number): number => (n + 3) & ~3;
  for (;;) {
    expect(buf.toString('ascii', at, at + 6)).toBe('070701');
    const field = (i: number): number => parseInt(buf.toString('ascii', at + 6 + i * 8, at + 14 + i * 8), 16);
    const nameSize = field(11);
    const size = field(6);
    const name = buf.toString('utf8', at + 110, at + 110 + nameSize - 1);
    const dataAt = align(at + 110 + nameSize);
    if (name === 'TRAILER!!!') return out;
    out.push({
      name,
      mode: field(1),
      uid: field(2),
      rdevMajor: field(9),
      rdevMinor: field(10),
      data: buf.toString('utf8', dataAt, dataAt + size),
    });
    at = align(dataAt + size);
  }
}

it('writes parents before children, owned by root, with device nodes and symlinks', () => {
  const parsed = readNewc(
    writeNewc([
      { type: 'file', path: '/sbin/capsem-agent', data: Buffer.from('agent!'), mode: 0o755 },
      { type: 'chardev', path: 'dev/console', major: 5, minor: 1 },
      { type: 'symlink', path: 'bin/sh', target: '/bin/busybox' },
      { type: 'dir', path: 'tmp', mode: 0o1777 },
      { type: 'dir', path: 'dev', mode: 0o700 },
    ]),
  );
  expect(parsed.map((e) => e.name)).toEqual(['bin', 'bin/sh', 'dev', 'dev/console', 'sbin', 'sbin/capsem-agent', 'tmp']);
  const byName = new Map(parsed.map((e) => [e.name, e]));
  expect(byName.get('sbin/capsem-agent')).toMatchObject({ mode: 0o100755, uid: 0, data: 'agent!' });
  expect(byName.get('dev/console')).toMatchObject({ mode: 0o020600, rdevMajor: 5, rdevMinor: 1 });
  expect(byName.get('bin/sh')).toMatchObject({ mode: 0o120777, data: '/bin/busybox' });
  expect(byName.get('tmp')!.mode).toBe(0o041777);
  // An explicit directory after its implied creation keeps the explicit mode.
  expect(byName.get('dev')!.mode).toBe(0o040700);
});

it('gives the same bytes for the same entries, whatever order they come in', () => {
  const a = writeNewc([
    { type: 'file', path: 'a/b', data: Buffer.from('1') },
    { type: 'file', path: 'c', data: Buffer.from('22') },
  ]);
  const b = writeNewc([
    { type: 'file', path: 'c', data: Buffer.from('22') },
    { type: 'file', path: 'a/b', data: Buffer.from('1') },
  ]);
  expect(a.equals(b)).toBe(true);
});

it('refuses paths that climb out or repeat', () => {
  expect(() => writeNewc([{ type: 'dir', path: '../etc' }])).toThrow(/bad initramfs path/);
  expect(() =>
    writeNewc([
      { type: 'file', path: 'x', data: Buffer.alloc(0) },
      { type: 'file', path: 'x', data: Buffer.alloc(0) },
    ]),
  ).toThrow(/duplicate/);
  expect(() =>
    writeNewc([
      { type: 'file', path: 'x', data: Buffer.alloc(0) },
      { type: 'file', path: 'x/y', data: Buffer.alloc(0) },
    ]),
  ).toThrow(/both a file and a directory/);
});
