import { FitAddon } from '@xterm/addon-fit';
import { Terminal } from '@xterm/xterm';
import '@xterm/xterm/css/xterm.css';
import { useEffect, useRef, useState } from 'react';
import type { StartProgress, TerminalScrollbackLines, Transcript, TranscriptPart } from '../../electron/contract/appContract.ts';
import { useApi } from '../api/ApiContext.tsx';
import { errorText } from '../api/callError.ts';
import { StartingNote } from '../app/StartingNote.tsx';

type Mode =
  | { kind: 'attaching' }
  | { kind: 'live'; exitCode?: number | null }
  | { kind: 'replay'; events: number }
  | { kind: 'none' }
  | { kind: 'error'; message: string };

/** The scrollback the host keeps of a live terminal too, so a repaint brings back all this view had. */
const SCROLLBACK: TerminalScrollbackLines = 10_000;

/** The contract bounds a terminal size to 2..1000 in both directions. */
const clamp = (n: number) => Math.max(2, Math.min(1000, Math.floor(n)));

/** One chunk of an asciicast: output written in order, recorded resizes applied as they came; resolves once the terminal has taken it in. */
function play(term: Terminal, part: TranscriptPart): Promise<void> {
  for (const [, type, data] of part.events) {
    if (type === 'o') term.write(data);
    else {
      const match = /^(\d+)x(\d+)$/.exec(data);
      if (match) term.resize(clamp(Number(match[1])), clamp(Number(match[2])));
    }
  }
  return new Promise((resolve) => term.write('', resolve));
}

/**
 * An ended session's transcript, a chunk at a time: the next is asked for once the terminal has
 * taken in the last, so a long recording neither arrives in one message nor piles up in the page.
 */
async function replay(
  term: Terminal,
  transcript: Transcript,
  more: (from: number) => Promise<TranscriptPart>,
  gone: () => boolean,
  played: (events: number) => void,
): Promise<void> {
  term.resize(clamp(transcript.width), clamp(transcript.height));
  let part: TranscriptPart = transcript;
  let events = 0;
  for (;;) {
    await play(term, part);
    if (gone()) return;
    events += part.events.length;
    played(events);
    if (part.next === null) return;
    part = await more(part.next);
    if (gone()) return;
  }
}

function themeFromPage(): { background: string; foreground: string; cursor: string; selectionBackground: string } {
  const css = getComputedStyle(document.documentElement);
  const read = (name: string, fallback: string) => css.getPropertyValue(name).trim() || fallback;
  return {
    background: read('--term-bg', '#111'),
    foreground: read('--term-fg', '#ddd'),
    cursor: read('--term-fg', '#ddd'),
    selectionBackground: read('--term-selection', '#3a5a8a'),
  };
}

/** Tells the host how much output has been drawn: one call in flight at a time, each carrying all drawn since the last. */
function drawnAcknowledger(send: (chars: number) => Promise<unknown>): (chars: number) => void {
  let pending = 0;
  let inFlight = false;
  const flush = (): void => {
    if (inFlight || pending === 0) return;
    const chars = pending;
    pending = 0;
    inFlight = true;
    void send(chars)
      .catch(() => undefined)
      .finally(() => {
        inFlight = false;
        flush();
      });
  };
  return (chars) => {
    pending += chars;
    flush();
  };
}

interface Props {
  readonly sessionId: string;
  readonly visible: boolean;
  /** The session's start while it is under way: shown until the terminal is live. */
  readonly starting: StartProgress | null;
}

/**
 * The session's terminal: live (terminal.attach, the screen as it stands and then output events
 * in, keystrokes and resizes out) or, for an ended session, its recorded transcript. Created the
 * first time the view is shown, because fitting needs a laid-out container; kept after that so
 * scrollback survives tab switches. While the session starts, attaching waits and its progress
 * shows; a start that fails shows why.
 */
export function TerminalView({ sessionId, visible, starting }: Props) {
  const api = useApi();
  const container = useRef<HTMLDivElement>(null);
  const [mode, setMode] = useState<Mode>({ kind: 'attaching' });

  useEffect(() => {
    const element = container.current;
    if (!element) return;
    const term = new Terminal({
      fontFamily: 'ui-monospace, "SF Mono", Menlo, Consolas, "DejaVu Sans Mono", monospace',
      fontSize: 13,
      scrollback: SCROLLBACK,
      theme: themeFromPage(),
      allowProposedApi: false,
    });
    const fit = new FitAddon();
    term.loadAddon(fit);
    term.open(element);
    fit.fit();
    let live = false;
    let disposed = false;
    const cleanups: (() => void)[] = [];

    // Each piece is acknowledged once xterm has drawn it: the host keeps the shell at most a
    // window ahead of what this page has shown.
    const drawn = drawnAcknowledger((chars) => api.call('terminal.ack', { id: sessionId, chars }));
    // Every attach (this one, or the one replayed after the socket reconnects) begins with the
    // screen as the host holds it: it replaces whatever this terminal showed.
    cleanups.push(
      api.on('terminal.screen', (event) => {
        if (event.id !== sessionId) return;
        // A full reset (RIS) queued with the writes, not term.reset(): that acts at once, while an
        // earlier screen may still be waiting in xterm's write queue and would be drawn after it.
        term.write(`\x1bc${event.data}`, () => drawn(event.data.length));
      }),
    );
    cleanups.push(api.on('terminal.output', (event) => event.id === sessionId && term.write(event.data, () => drawn(event.data.length))));
    cleanups.push(api.on('terminal.exit', (event) => event.id === sessionId && setMode({ kind: 'live', exitCode: event.code })));

    api.call('terminal.attach', { id: sessionId, size: { cols: clamp(term.cols), rows: clamp(term.rows) } }).then(
      (result) => {
        if (disposed) return;
        live = result.live;
        if (result.live) {
          setMode({ kind: 'live' });
          term.focus();
        } else if (result.transcript) {
          const more = (from: number) => api.call('terminal.replay', { id: sessionId, from });
          replay(
            term,
            result.transcript,
            more,
            () => disposed,
            (events) => setMode({ kind: 'replay', events }),
          ).catch((e: unknown) => !disposed && setMode({ kind: 'error', message: errorText(e) }));
        } else setMode({ kind: 'none' });
      },
      (e: unknown) => !disposed && setMode({ kind: 'error', message: errorText(e) }),
    );

    const input = term.onData((data) => {
      if (live) void api.call('terminal.input', { id: sessionId, data }).catch(() => undefined);
    });
    cleanups.push(() => input.dispose());

    // Refit when the container changes size; tell the VM's pty only when cols/rows really moved,
    // and not while hidden (a hidden pane measures 0x0). A replay keeps its recorded size.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const observer = new ResizeObserver(() => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        if (disposed || element.clientWidth === 0 || element.clientHeight === 0 || !live) return;
        const before = `${term.cols}x${term.rows}`;
        fit.fit();
        if (`${term.cols}x${term.rows}` !== before)
          void api
            .call('terminal.resize', { id: sessionId, size: { cols: clamp(term.cols), rows: clamp(term.rows) } })
            .catch(() => undefined);
      }, 80);
    });
    observer.observe(element);
    cleanups.push(() => observer.disconnect());

    return () => {
      disposed = true;
      clearTimeout(timer);
      for (const cleanup of cleanups) cleanup();
      if (live) void api.call('terminal.detach', { id: sessionId }).catch(() => undefined);
      term.dispose();
    };
  }, [api, sessionId]);

  return (
    <div className="terminal-view">
      <div className="terminal-note" data-testid="terminal-note">
        {mode.kind === 'attaching' && (starting ? <StartingNote progress={starting} detail /> : 'Attaching…')}
        {mode.kind === 'live' &&
          (mode.exitCode === undefined ? 'live' : `the session's shell exited${mode.exitCode === null ? '' : ` (code ${mode.exitCode})`}`)}
        {mode.kind === 'replay' &&
          (mode.events > 0
            ? `replay of an ended session (${mode.events} recorded events)`
            : 'replay of an ended session: no terminal output was recorded')}
        {mode.kind === 'none' && 'This session has no terminal transcript.'}
        {mode.kind === 'error' && <span className="error">{mode.message}</span>}
      </div>
      <div ref={container} className="terminal" data-testid="terminal" data-visible={visible} />
    </div>
  );
}
