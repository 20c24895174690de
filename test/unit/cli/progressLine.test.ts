import { describe, expect, it } from 'vitest';
import { formatProgress, progressLine } from '../../../electron/cli/progressLine.ts';

describe('progressLine', () => {
  it('formats a stage with its percentage and cuts to the width', () => {
    expect(formatProgress({ stage: 'squashfs', message: 'compressing', fraction: 0.456 })).toBe('[ 46%] squashfs: compressing');
    expect(formatProgress({ stage: 'debootstrap', message: 'x'.repeat(100), fraction: 2 }, 30)).toHaveLength(30);
  });

  it('redraws one line on a TTY and prints plain lines per stage or tenth otherwise', () => {
    const tty: string[] = [];
    const line = progressLine({ isTTY: true, columns: 80, write: (t: string) => tty.push(t) });
    line.update({ stage: 'a', message: 'one', fraction: 0.1 });
    line.update({ stage: 'a', message: 'two', fraction: 0.12 });
    line.finish('done');
    expect(tty).toEqual(['\r\x1b[K[ 10%] a: one', '\r\x1b[K[ 12%] a: two', '\r\x1b[K', 'done\n']);

    const log: string[] = [];
    const plain = progressLine({ isTTY: false, write: (t: string) => log.push(t) });
    for (const [stage, fraction] of [
      ['a', 0.1],
      ['a', 0.15],
      ['a', 0.21],
      ['b', 0.22],
      ['b', 0.5],
    ] as const)
      plain.update({ stage, message: 'm', fraction });
    plain.finish();
    expect(log).toEqual(['[ 10%] a: m\n', '[ 21%] a: m\n', '[ 22%] b: m\n', '[ 50%] b: m\n']);
  });
});
