import { useCallback, useEffect, useState } from 'react';
import type { CallResult } from '../../electron/contract/appContract.ts';
import { useApi } from '../api/ApiContext.tsx';
import { errorText } from '../api/callError.ts';

type KeyList = CallResult<'keys.list'>;
type Source = KeyList['providers'][number];

/** A key is stored for this provider, whether or not this process can read it. */
const isStored = (p: Source): boolean => p.source === 'stored' || p.source === 'locked';

function sourceText(p: Source): string {
  if (p.source === 'env') return `from ${p.variable ?? 'the environment'} (wins over a stored key)`;
  if (p.source === 'locked') return 'stored by the desktop app, encrypted; readable only while the app runs';
  return p.source === 'stored' ? 'stored' : 'no key';
}

/**
 * Settings → Keys: each provider's key added, replaced or removed through the core, which keeps it
 * on this machine (where, it says); sessions get stand-ins. A key typed here is sent once and
 * never shown again.
 */
export function KeysSettings() {
  const api = useApi();
  const [list, setList] = useState<KeyList | null>(null);
  const [drafts, setDrafts] = useState<Readonly<Record<string, string>>>({});
  const [problem, setProblem] = useState<string | null>(null);

  const refresh = useCallback(() => api.call('keys.list', {}).then(setList, (e: unknown) => setProblem(errorText(e))), [api]);
  useEffect(() => {
    void refresh();
  }, [refresh]);

  const done = (provider: string) => {
    setDrafts((d) => ({ ...d, [provider]: '' }));
    setProblem(null);
    return refresh();
  };
  const save = (provider: string) =>
    api.call('keys.set', { provider, key: drafts[provider] ?? '' }).then(
      () => done(provider),
      (e: unknown) => setProblem(errorText(e)),
    );
  const remove = (provider: string) =>
    api.call('keys.remove', { provider }).then(
      () => done(provider),
      (e: unknown) => setProblem(errorText(e)),
    );

  return (
    <div className="settings-keys" data-testid="settings-keys">
      <h2>Provider keys</h2>
      <p>
        Keys never enter a session: its programs get a stand-in, and the proxy puts the real key on requests to that provider&apos;s own API
        hosts.
        {list && (
          <>
            {' '}
            Stored keys: <span data-testid="keys-store">{list.store}</span>.
          </>
        )}
      </p>
      {problem && (
        <p role="alert" className="keys-problem" data-testid="keys-problem">
          {problem}
        </p>
      )}
      <table>
        <tbody>
          {list?.providers.map((p) => (
            <tr key={p.id} data-testid="key-row" data-provider={p.id}>
              <th scope="row">{p.id}</th>
              <td data-testid="key-source">{sourceText(p)}</td>
              <td>
                <input
                  type="password"
                  autoComplete="off"
                  aria-label={`${p.id} key`}
                  data-testid="key-input"
                  value={drafts[p.id] ?? ''}
                  onChange={(e) => setDrafts((d) => ({ ...d, [p.id]: e.target.value }))}
                />
              </td>
              <td>
                <button type="button" data-testid="key-save" disabled={!(drafts[p.id] ?? '').trim()} onClick={() => void save(p.id)}>
                  {isStored(p) ? 'Replace' : 'Add'}
                </button>
                <button type="button" data-testid="key-remove" disabled={!isStored(p)} onClick={() => void remove(p.id)}>
                  Remove
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
