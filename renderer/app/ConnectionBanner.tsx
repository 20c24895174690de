import { useConnectionState } from '../api/ApiContext.tsx';
import { useNow } from './useNow.ts';

/** Browser mode only: says plainly when the core is unreachable and when the next try is. */
export function ConnectionBanner() {
  const { state, retryNow } = useConnectionState();
  const now = useNow(500, state.kind === 'disconnected');
  if (state.kind === 'open') return null;
  if (state.kind === 'connecting' && state.attempt === 0) return null;
  const seconds = state.kind === 'disconnected' ? Math.max(0, Math.ceil((state.retryAt - now) / 1000)) : 0;
  return (
    <div className="banner" role="status" data-testid="disconnected-banner">
      <strong>Disconnected</strong> from the Capsem core
      {state.kind === 'disconnected' ? ` (${state.reason}); reconnecting in ${seconds} s` : '; reconnecting…'}
      {state.kind === 'disconnected' && (
        <button type="button" className="link" onClick={retryNow}>
          retry now
        </button>
      )}
    </div>
  );
}
