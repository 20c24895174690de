import { useVirtualizer } from '@tanstack/react-virtual';
import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState } from 'react';
import type { TableKind } from '../../electron/contract/appContract.ts';
import { useApi } from '../api/ApiContext.tsx';
import { errorText } from '../api/callError.ts';
import { formatCount } from '../app/format.ts';
import { ExpansionsContext, type Expansions } from './ConversationText.tsx';
import { ConversationTurn } from './ConversationTurn.tsx';
import { useConversationPages } from './useConversationPages.ts';

/** A turn's height before it is measured; turns vary from one line to pages, so each is measured once drawn. */
const ESTIMATED_TURN_PX = 220;

/**
 * A request to show the turn holding an event: a timeline seq (kind null), or a model call's or
 * tool call's row seq (a search hit); `nonce` repeats a jump.
 */
export interface TurnFocus {
  readonly seq: number;
  readonly kind: 'model' | 'tool' | null;
  readonly nonce: number;
}

interface Props {
  readonly sessionId: string;
  readonly visible: boolean;
  readonly liveVersion: number;
  readonly focus: TurnFocus | null;
  readonly onJump: (kind: TableKind, seq: number) => void;
}

/**
 * The session as the agent's story: turns in a virtualized list, loaded a page at a time around
 * the viewport, each measured once drawn. A live session's new turns stream in, and the list
 * follows them while it is scrolled to its end.
 */
export function ConversationView({ sessionId, visible, liveVersion, focus, onJump }: Props) {
  const api = useApi();
  const pages = useConversationPages(sessionId, liveVersion);
  const scroller = useRef<HTMLDivElement>(null);
  const savedScroll = useRef(0);
  const following = useRef(false);
  const [focused, setFocused] = useState<number | null>(null);
  const [findError, setFindError] = useState<string | null>(null);
  const count = pages.total ?? 0;

  const virtualizer = useVirtualizer({
    count,
    getScrollElement: () => scroller.current,
    estimateSize: () => ESTIMATED_TURN_PX,
    overscan: 3,
    useFlushSync: false,
  });
  const items = virtualizer.getVirtualItems();
  const first = items[0]?.index ?? 0;
  const last = items.at(-1)?.index ?? 0;

  const { ensure } = pages;
  useEffect(() => {
    if (count > 0) ensure(first, last);
  }, [ensure, first, last, count]);

  // New turns while the list sits at its end: keep showing the newest.
  useEffect(() => {
    if (following.current && count > 0) virtualizer.scrollToIndex(count - 1, { align: 'end' });
    // Only a new count moves the view.
  }, [count]);

  useLayoutEffect(() => {
    if (visible && scroller.current && scroller.current.scrollTop !== savedScroll.current) scroller.current.scrollTop = savedScroll.current;
  }, [visible]);

  // A turn asked for: found by the host, then scrolled to once the list is long enough to hold it.
  const [target, setTarget] = useState<{ index: number; nonce: number } | null>(null);
  useEffect(() => {
    if (!focus) return;
    let cancelled = false;
    setFindError(null);
    api.call('sessions.conversationFind', { id: sessionId, seq: focus.seq, kind: focus.kind }).then(
      ({ index }) => {
        if (cancelled) return;
        if (index === null) setFindError(`no turn holds ${focus.kind ?? 'event'} #${focus.seq}`);
        else {
          following.current = false;
          setFocused(index);
          setTarget({ index, nonce: focus.nonce });
        }
      },
      (e: unknown) => !cancelled && setFindError(errorText(e)),
    );
    return () => {
      cancelled = true;
    };
    // Only a new focus request moves the view.
  }, [focus]);
  // Turns far from the ones drawn arrive as placeholders first: the jump is made again once the
  // target and the turn above it are loaded, and the virtualizer keeps it in place as they are measured.
  useEffect(() => {
    if (!target || target.index >= count) return;
    virtualizer.scrollToIndex(target.index, { align: 'start' });
    if (pages.turnAt(target.index) !== undefined && (target.index === 0 || pages.turnAt(target.index - 1) !== undefined)) setTarget(null);
    // The virtualizer and the pages are new each render; the target, the count and each arrival say when to move.
  }, [target, count, pages.loads]);

  const [opened, setOpened] = useState<ReadonlyMap<string, { open: boolean; whole?: string }>>(new Map());
  const expansions = useMemo<Expansions>(
    () => ({
      isOpen: (key) => opened.get(key)?.open ?? false,
      whole: (key) => opened.get(key)?.whole,
      set: (key, open, whole) => setOpened((m) => new Map(m).set(key, whole === undefined ? { open } : { open, whole })),
    }),
    [opened],
  );
  const labels = useMemo(() => new Map(pages.agents.map((a) => [a.id, a.label])), [pages.agents]);
  const agentLabel = useCallback((id: string) => (id === 'main' ? 'main agent' : (labels.get(id) ?? id)), [labels]);

  return (
    <div className="conversation-view" data-testid="conversation">
      <div className="toolbar">
        <span className="muted count" data-testid="conversation-count">
          {pages.total === null ? 'loading…' : `${formatCount(pages.total)} ${pages.total === 1 ? 'turn' : 'turns'}`}
        </span>
        {pages.error && <span className="error">{pages.error}</span>}
        {findError && <span className="error">{findError}</span>}
      </div>
      <ExpansionsContext.Provider value={expansions}>
        <div
          ref={scroller}
          className="conversation-scroll"
          data-testid="conversation-scroll"
          onScroll={(e) => {
            const el = e.currentTarget;
            savedScroll.current = el.scrollTop;
            following.current = el.scrollTop + el.clientHeight >= el.scrollHeight - 4;
          }}
        >
          <div style={{ height: virtualizer.getTotalSize(), position: 'relative' }}>
            {items.map((item) => {
              const turn = pages.turnAt(item.index);
              return (
                <div
                  key={item.key}
                  ref={virtualizer.measureElement}
                  data-index={item.index}
                  className="turn-slot"
                  style={{ transform: `translateY(${item.start}px)` }}
                >
                  {turn ? (
                    <ConversationTurn
                      sessionId={sessionId}
                      turn={turn}
                      agentLabel={agentLabel}
                      focused={focused === item.index}
                      onJump={onJump}
                    />
                  ) : (
                    <div className="turn muted" data-testid="turn-loading" style={{ height: ESTIMATED_TURN_PX - 12 }}>
                      turn {item.index + 1}…
                    </div>
                  )}
                </div>
              );
            })}
          </div>
          {pages.total === 0 && <div className="muted pad">No model calls yet.</div>}
        </div>
      </ExpansionsContext.Provider>
    </div>
  );
}
