/** A session's status as a colored badge; the reason (crash cause, etc.) on hover. */
export function StatusBadge({ status, reason }: { readonly status: string; readonly reason?: string | null }) {
  return (
    <span className={`badge status-${status}`} title={reason ?? status} data-testid="status-badge">
      {status}
    </span>
  );
}
