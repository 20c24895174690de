import { useEffect, useState } from 'react';
import type { EventDetail, TableKind } from '../../electron/contract/appContract.ts';
import { useApi } from '../api/ApiContext.tsx';
import { errorText } from '../api/callError.ts';
import { cellText } from '../app/format.ts';
import { BodyBlock } from './BodyBlock.tsx';
import { FrameList } from './FrameList.tsx';
import { ModelItems } from './ModelItems.tsx';

interface Props {
  readonly sessionId: string;
  readonly kind: TableKind;
  readonly seq: number;
  readonly onJump: (kind: TableKind, seq: number) => void;
  readonly onClose: () => void;
}

function KeyValues({ title, values }: { readonly title: string; readonly values: Record<string, string | number | null> }) {
  const entries = Object.entries(values);
  if (entries.length === 0) return null;
  return (
    <section>
      <h4>{title}</h4>
      <table className="kv">
        <tbody>
          {entries.map(([key, value]) => (
            <tr key={key}>
              <th>{key}</th>
              <td>{cellText(value)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

/** Everything about one row (events.detail): fields, links to related rows, headers, bodies, items. */
export function DetailPane({ sessionId, kind, seq, onJump, onClose }: Props) {
  const api = useApi();
  const [detail, setDetail] = useState<EventDetail | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    let cancelled = false;
    setDetail(null);
    setError(null);
    api.call('events.detail', { id: sessionId, kind, seq }).then(
      (d) => !cancelled && setDetail(d),
      (e: unknown) => !cancelled && setError(errorText(e)),
    );
    return () => {
      cancelled = true;
    };
  }, [api, sessionId, kind, seq]);

  return (
    <aside className="detail" data-testid="detail-pane" data-seq={seq}>
      <header className="detail-head">
        <strong>
          {kind} #{seq}
        </strong>
        {detail && <code className="muted">{detail.eventId}</code>}
        <span className="spacer" />
        <button type="button" className="link" onClick={onClose} aria-label="close detail" data-testid="detail-close">
          close
        </button>
      </header>
      <div className="detail-body">
        {error && <div className="error">{error}</div>}
        {!detail && !error && <div className="muted">Loading…</div>}
        {detail && (
          <>
            {(detail.modelCallSeq !== null || detail.netSeq !== null) && (
              <div className="links">
                {detail.modelCallSeq !== null && (
                  <button
                    type="button"
                    className="link"
                    data-testid="detail-model-link"
                    onClick={() => onJump('model', detail.modelCallSeq!)}
                  >
                    emitted by model call #{detail.modelCallSeq}
                  </button>
                )}
                {detail.netSeq !== null && (
                  <button type="button" className="link" data-testid="detail-net-link" onClick={() => onJump('net', detail.netSeq!)}>
                    carried by request #{detail.netSeq}
                  </button>
                )}
              </div>
            )}
            <KeyValues title="fields" values={detail.fields} />
            {detail.items.length > 0 && <ModelItems items={detail.items} />}
            {detail.requestHeaders && <KeyValues title="request headers" values={detail.requestHeaders} />}
            {detail.responseHeaders && <KeyValues title="response headers" values={detail.responseHeaders} />}
            {detail.bodies.map((body) => (
              <BodyBlock key={body.direction} sessionId={sessionId} eventId={detail.eventId} body={body} />
            ))}
            {detail.frameCount > 0 && <FrameList frames={detail.frames} total={detail.frameCount} />}
          </>
        )}
      </div>
    </aside>
  );
}
