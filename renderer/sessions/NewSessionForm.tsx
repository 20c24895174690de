import { useEffect, useState, type FormEvent } from 'react';
import type { CallResult, TerminalChoice } from '../../electron/contract/appContract.ts';
import { DEFAULT_IMAGE_KIND, type ImageKind } from '../../electron/contract/guestImages.ts';
import { useApi, usePickFolder } from '../api/ApiContext.tsx';
import { toCallError } from '../api/callError.ts';
import { ImageSelect, imageFor } from './ImageSelect.tsx';

type RecentFolder = CallResult<'folders.recent'>[number];

/** What the new session's terminal runs; the coding agents are in the agent image only. */
const TERMINALS: Readonly<Record<TerminalChoice, string>> = { shell: 'Shell', claude: 'Claude Code', codex: 'Codex', gemini: 'Gemini CLI' };
const isTerminalChoice = (value: string): value is TerminalChoice => Object.hasOwn(TERMINALS, value);

/**
 * Starts a session (sessions.start) with a shell or a coding agent on its terminal, and opens its tab. The name is optional: ids are the key. The
 * project folder is optional too (without it the session gets a fresh folder of its own): typed,
 * taken from the folders sessions were last started on, or in Electron chosen in the system's
 * picker. A folder holding the whole home folder is shared only once the user ticks that they mean it.
 */
export function NewSessionForm({ onStarted }: { readonly onStarted: (id: string) => void }) {
  const api = useApi();
  const pickFolder = usePickFolder();
  const [open, setOpen] = useState(false);
  const [name, setName] = useState('');
  const [image, setImage] = useState<ImageKind>(DEFAULT_IMAGE_KIND);
  const [folder, setFolder] = useState('');
  const [recent, setRecent] = useState<readonly RecentFolder[]>([]);
  const [askWholeHome, setAskWholeHome] = useState(false);
  const [wholeHome, setWholeHome] = useState(false);
  const [agent, setAgent] = useState<TerminalChoice>('shell');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    if (!open) return;
    let current = true;
    api.call('folders.recent', {}).then(
      (folders) => current && setRecent(folders),
      () => current && setRecent([]),
    );
    return () => {
      current = false;
    };
  }, [api, open]);

  const chooseFolder = (path: string) => {
    setFolder(path);
    setAskWholeHome(false);
    setWholeHome(false);
    setError(null);
  };

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const { id } = await api.call('sessions.start', {
        name: name.trim() || null,
        image: imageFor(agent, image),
        workspace: folder.trim() || null,
        wholeHome,
        agent,
      });
      setOpen(false);
      setName('');
      chooseFolder('');
      onStarted(id);
    } catch (err) {
      const failure = toCallError(err);
      if (failure.code === 'whole_home') setAskWholeHome(true);
      setError(failure.message);
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
      <input
        data-testid="new-session-name"
        placeholder="name (optional)"
        value={name}
        maxLength={64}
        autoFocus
        spellCheck={false}
        onChange={(e) => setName(e.target.value)}
      />
      <select
        data-testid="new-session-agent"
        value={agent}
        aria-label="runs"
        onChange={(e) => isTerminalChoice(e.target.value) && setAgent(e.target.value)}
      >
        {Object.entries(TERMINALS).map(([value, label]) => (
          <option key={value} value={value}>
            {label}
          </option>
        ))}
      </select>
      <ImageSelect terminal={agent} value={image} onChange={setImage} />
      <input
        className="folder-path"
        data-testid="new-session-folder"
        placeholder="project folder, shared at /workspace (optional)"
        title="An absolute path on this computer. Without one, the session gets a fresh folder of its own."
        value={folder}
        maxLength={4096}
        spellCheck={false}
        onChange={(e) => chooseFolder(e.target.value)}
      />
      {pickFolder && (
        <button
          type="button"
          data-testid="new-session-pick-folder"
          disabled={busy}
          onClick={() => void pickFolder().then((path) => path !== null && chooseFolder(path))}
        >
          Choose…
        </button>
      )}
      <button type="submit" className="primary" disabled={busy} data-testid="new-session-start">
        {busy ? 'Starting…' : 'Start'}
      </button>
      <button type="button" onClick={() => setOpen(false)} disabled={busy}>
        Cancel
      </button>
      {askWholeHome && (
        <label className="whole-home">
          <input
            type="checkbox"
            data-testid="new-session-whole-home"
            checked={wholeHome}
            onChange={(e) => setWholeHome(e.target.checked)}
          />
          Share my whole home folder
        </label>
      )}
      {recent.length > 0 && (
        <div className="recent-folders" data-testid="recent-folders">
          <span className="muted">recent:</span>
          {recent.map((f) => (
            <button
              type="button"
              key={f.path}
              data-testid="recent-folder"
              disabled={!f.exists || busy}
              title={f.exists ? `share ${f.path}` : `${f.path} is gone`}
              onClick={() => chooseFolder(f.path)}
            >
              {f.path}
              {!f.exists && ' (gone)'}
            </button>
          ))}
        </div>
      )}
      {error && (
        <span className="error" role="alert">
          {error}
        </span>
      )}
    </form>
  );
}
