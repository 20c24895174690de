import { useState, type FormEvent } from 'react';
import { useApi } from '../api/ApiContext.tsx';
import { errorText } from '../api/callError.ts';

type Image = 'agent' | 'minimal';

/** Starts a session (sessions.start) and opens its tab. The name is optional: ids are the key. */
export function NewSessionForm({ onStarted }: { readonly onStarted: (id: string) => void }) {
  const api = useApi();
  const [open, setOpen] = useState(false);
  const [name, setName] = useState('');
  const [image, setImage] = useState<Image>('agent');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const { id } = await api.call('sessions.start', { name: name.trim() || null, image });
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
      <select data-testid="new-session-image" value={image} onChange={(e) => setImage(e.target.value === 'minimal' ? 'minimal' : 'agent')}>
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
