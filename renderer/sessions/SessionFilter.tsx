import { useState } from 'react';
import type { CallError, SessionSummary } from '../../electron/contract/appContract.ts';
import { useApi } from '../api/ApiContext.tsx';
import { toCallError } from '../api/callError.ts';
import { ResolveProblem } from './ResolveProblem.tsx';

interface Props {
  readonly value: string;
  readonly onChange: (value: string) => void;
  /** The rows the filter currently shows, so Enter on a single match opens it without a round trip. */
  readonly matches: readonly SessionSummary[];
  readonly onOpen: (id: string) => void;
}

/**
 * The list's filter, and the one place a typed name becomes an id: Enter asks sessions.resolve
 * (the host's single resolver), so a name shared by two sessions is an error with candidates to
 * pick, never a guess.
 */
export function SessionFilter({ value, onChange, matches, onOpen }: Props) {
  const api = useApi();
  const [problem, setProblem] = useState<CallError | null>(null);

  const resolve = async () => {
    const query = value.trim();
    if (!query) return;
    try {
      const { id } = await api.call('sessions.resolve', { query });
      setProblem(null);
      onOpen(id);
    } catch (e) {
      // A substring that matches exactly one row is not a name the resolver knows, but it is
      // unambiguous on screen: open what the person is looking at.
      const only = matches.length === 1 ? matches[0] : undefined;
      if (only) {
        setProblem(null);
        onOpen(only.id);
        return;
      }
      setProblem(toCallError(e));
    }
  };

  return (
    <div className="filter-block">
      <input
        data-testid="session-filter"
        className="filter"
        type="search"
        placeholder="Filter by name or id; Enter opens"
        value={value}
        autoFocus
        spellCheck={false}
        onChange={(e) => {
          onChange(e.target.value);
          setProblem(null);
        }}
        onKeyDown={(e) => {
          if (e.key === 'Enter') void resolve();
          if (e.key === 'Escape') onChange('');
        }}
      />
      {problem && <ResolveProblem problem={problem} onOpen={onOpen} />}
    </div>
  );
}
