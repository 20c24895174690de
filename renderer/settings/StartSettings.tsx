import { useEffect, useState } from 'react';
import type { CallResult } from '../../electron/contract/appContract.ts';
import { useApi } from '../api/ApiContext.tsx';
import { errorText } from '../api/callError.ts';

type Settings = CallResult<'settings.get'>;

/**
 * Settings → Start: whether the app keeps one VM of the agent image booted ahead, so Start adopts
 * it instead of waiting for a boot. It costs the idle VM's memory and a little CPU; a flag can
 * turn it off for one run whatever is chosen here, and the view says so.
 */
export function StartSettings() {
  const api = useApi();
  const [settings, setSettings] = useState<Settings | null>(null);
  const [problem, setProblem] = useState<string | null>(null);

  useEffect(() => {
    api.call('settings.get', {}).then(setSettings, (e: unknown) => setProblem(errorText(e)));
  }, [api]);

  // The box follows the click at once; what the core kept replaces it, and a refusal puts it back.
  const change = (spareVm: boolean) => {
    const before = settings;
    if (before) setSettings({ ...before, spareVm });
    return api.call('settings.set', { spareVm }).then(
      (s) => {
        setSettings(s);
        setProblem(null);
      },
      (e: unknown) => {
        setSettings(before);
        setProblem(errorText(e));
      },
    );
  };

  return (
    <div className="settings-start" data-testid="settings-start">
      <h2>Start</h2>
      <label>
        <input
          type="checkbox"
          data-testid="spare-vm"
          disabled={settings === null}
          checked={settings?.spareVm ?? false}
          onChange={(e) => void change(e.target.checked)}
        />{' '}
        Keep a VM booted ahead, so a new agent session starts without waiting for a boot (it uses the memory of one idle VM)
      </label>
      {settings?.spareVmOff && <p data-testid="spare-vm-off">{settings.spareVmOff}</p>}
      {problem && (
        <p role="alert" data-testid="start-problem">
          {problem}
        </p>
      )}
    </div>
  );
}
