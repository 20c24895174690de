import { createContext, useContext, useState } from 'react';
import type { ConversationText as Text } from '../../electron/contract/appContract.ts';
import { useApi } from '../api/ApiContext.tsx';
import { errorText } from '../api/callError.ts';
import { formatCount } from '../app/format.ts';
import { ModelMarkdown } from './ModelMarkdown.tsx';

/** A long text shows this many lines (or characters) until opened. */
const COLLAPSED_LINES = 12;
const COLLAPSED_CHARS = 1200;
/** The most of one text fetched on opening it (the contract's cap). */
const MOST = 4 << 20;

/** What is open, and the whole texts fetched, by text: kept by the view, so a turn scrolled away and back keeps them. */
export interface Expansions {
  isOpen(key: string): boolean;
  whole(key: string): string | undefined;
  set(key: string, open: boolean, whole?: string): void;
}

export const ExpansionsContext = createContext<Expansions | null>(null);

const keyOf = (text: Text): string => `${text.source}:${text.rowId}`;

function pretty(text: string, json: boolean): string {
  if (!json) return text;
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

function firstLines(text: string): string {
  const lines = text.split('\n', COLLAPSED_LINES + 1);
  const cut = lines.slice(0, COLLAPSED_LINES).join('\n').slice(0, COLLAPSED_CHARS);
  return cut.length < text.length ? `${cut}…` : cut;
}

interface Props {
  readonly sessionId: string;
  readonly text: Text;
  /** plain and json in a monospace block (json indented once whole); markdown rendered. */
  readonly as: 'plain' | 'json' | 'markdown';
  /** `preview`: a long text shows its first lines until opened; `hidden`: nothing but the toggle until opened. */
  readonly collapse: 'preview' | 'hidden';
  readonly label?: string;
  readonly testId: string;
}

/**
 * A text of the Conversation: the head the page carried, opened (and, when the page cut it,
 * fetched whole with sessions.conversationText) on asking, so a 10,000-turn session never
 * carries its megabytes of tool output to draw its first screen.
 */
export function ConversationText({ sessionId, text, as, collapse, label, testId }: Props) {
  const api = useApi();
  const expansions = useContext(ExpansionsContext);
  const key = keyOf(text);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const whole = expansions?.whole(key);
  const full = whole ?? text.head;
  const long = !text.complete || full.length > COLLAPSED_CHARS || full.split('\n', COLLAPSED_LINES + 1).length > COLLAPSED_LINES;
  const open = expansions?.isOpen(key) ?? false;
  const collapsed = collapse === 'hidden' ? !open : long && !open;

  const toggle = async () => {
    if (open) {
      expansions?.set(key, false, whole);
      return;
    }
    if (text.complete || whole !== undefined) {
      expansions?.set(key, true, whole);
      return;
    }
    setBusy(true);
    setError(null);
    try {
      const got = await api.call('sessions.conversationText', {
        id: sessionId,
        source: text.source,
        rowId: text.rowId,
        offset: 0,
        length: Math.min(MOST, Math.max(1, text.total)),
      });
      expansions?.set(key, true, got.text);
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };

  const shown = collapsed ? (collapse === 'hidden' ? null : firstLines(text.head)) : full;
  const toggleLabel = collapsed
    ? collapse === 'hidden'
      ? `${label ?? 'show'} (${formatCount(text.total)} characters)`
      : `show all ${formatCount(text.total)} characters`
    : collapse === 'hidden'
      ? `hide ${label ?? ''}`.trim()
      : 'show less';
  return (
    <div className={`conversation-text text-${as}`} data-testid={testId} data-open={!collapsed}>
      {shown !== null &&
        (as === 'markdown' ? (
          <ModelMarkdown text={shown} />
        ) : (
          <pre className="item-text">{pretty(shown, as === 'json' && !collapsed && (whole !== undefined || text.complete))}</pre>
        ))}
      {(long || collapse === 'hidden') && (
        <div className="load-more">
          <button type="button" className="link" data-testid={`${testId}-toggle`} disabled={busy} onClick={() => void toggle()}>
            {busy ? 'loading…' : toggleLabel}
          </button>
          {error && <span className="error">{error}</span>}
        </div>
      )}
    </div>
  );
}
