import { describe, expect, it } from 'vitest';
import { TERMINAL_SCROLLBACK_LINES } from '../../../electron/contract/appContract.ts';
import { TerminalScreen } from '../../../electron/vm/terminalScreen.ts';

// The host's copy of a live terminal: xterm parses what it is given later, on timers, so a screen
// taken the moment the output was handed over must still hold all of it.

const lines = (from: number, to: number): string => Array.from({ length: to - from }, (_, i) => `line ${from + i}\r\n`).join('');

describe('TerminalScreen', () => {
  it('holds every chunk written before a snapshot taken at once, the parser not caught up yet', async () => {
    const screen = new TerminalScreen({ cols: 80, rows: 24 });
    const printed = TERMINAL_SCROLLBACK_LINES + 5000;
    const text = Buffer.from(lines(0, printed));
    for (let at = 0; at < text.length; at += 4096) screen.write(text.subarray(at, at + 4096));
    const rows = (await screen.snapshot()).split('\r\n');
    // The scrollback and the screen above the cursor's empty last row: the oldest are gone.
    const oldest = printed - TERMINAL_SCROLLBACK_LINES - 23;
    expect(rows).toContain(`line ${printed - 1}`);
    expect(rows).toContain(`line ${oldest}`);
    expect(rows).not.toContain(`line ${oldest - 1}`);
    screen.dispose();
  });

  it('answers a snapshot still waiting on the parser with an empty screen when disposed, and takes no more output', async () => {
    const screen = new TerminalScreen({ cols: 80, rows: 24 });
    screen.write(Buffer.from(lines(0, 10)));
    const taken = screen.snapshot();
    screen.dispose();
    expect(await taken).toBe('');
    expect(screen.write(Buffer.from('more'))).toBeUndefined();
    expect(await screen.snapshot()).toBe('');
  });
});
