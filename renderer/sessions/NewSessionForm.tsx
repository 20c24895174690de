import { useState, type FormEvent } from 'react';
import type { TerminalChoice } from '../../electron/contract/appContract.ts';
import { useApi } from '../api/ApiContext.tsx';
import { errorText } from '../api/callError.ts';

type Image = 'agent' | 'minimal';

/** What the new session's terminal runs; the coding agents are in the agent image only. */
const TERMINALS: Readonly<Record<TerminalChoice, string>> = { shell: 'Shell', claude: 'Claude Code', codex: 'Codex', gemini: 'Gemini CLI' };
const isTerminalChoice = (value: string): value is TerminalChoice => Object.hasOwn(TERMINALS, value);

/** Starts a session (sessions.start) with a shell or a coding agent on its terminal, and opens its tab. The name is optional: ids are the key. */
export function NewSessionForm({ onStarted }: { readonly onStarted: (id: string) => void }) {
  const api = useApi();
  const [open, setOpen] = useState(false);
  const [name, setName] = useState('');
  const [image, setImage] = useState<Image>('agent');
  const [agent, setAgent] = useState<TerminalChoice>('shell');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const { id } = await api.call('sessions.start', { name: name.trim() || null, image: agent === 'shell' ? image : 'agent', agent });
      setOpen(false);
      setName('');
      onStarted(id);
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };

  if (!open) {
    return (
      <button type="button" className="primary" data-testid="new-session" onClick={() => setOpen(true)}>
        New session
      </button>
    );
  }
  return (
    <form className="new-session" data-testid="new-session-form" onSubmit={(e) => void submit(e)}>
      <input data-testid="new-session-name" placeholder="name (optional)" value={name} maxLength={64} autoFocus spellCheck={false} onChange={(e) => setName(e.target.value)} />
      <select data-testid="new-session-agent" value={agent} aria-label="runs" onChange={(e) => isTerminalChoice(e.target.value) && setAgent(e.target.value)}>
        {Object.entries(TERMINALS).map(([value, label]) => (
          <option key={value} value={value}>
            {label}
          </option>
        ))}
      </select>
      <select data-testid="new-session-image" value={agent === 'shell' ? image : 'agent'} disabled={agent !== 'shell'} title={agent === 'shell' ? undefined : 'the coding agents are in the agent image'} onChange={(e) => setImage(e.target.value === 'minimal' ? 'minimal' : 'agent')}>
        <option value="agent">agent image</option>
        <option value="minimal">minimal image</option>
      </select>
      <button type="submit" className="primary" disabled={busy} data-testid="new-session-start">
        {busy ? 'Starting…' : 'Start'}
      </button>
      <button type="button" onClick={() => setOpen(false)} disabled={busy}>
        Cancel
      </button>
      {error && <span className="error" role="alert">{error}</span>}
    </form>
  );
}
