import type { Frame } from '../../electron/contract/appContract.ts';

/** An upgraded connection's frames as they passed: which way, what kind, how big, and what they said. */
export function FrameList({ frames, total }: { readonly frames: readonly Frame[]; readonly total: number }) {
  return (
    <section>
      <h4>
        frames ({total}
        {total > frames.length ? `, the first ${frames.length} shown` : ''})
      </h4>
      <ol className="model-items" data-testid="frames">
        {frames.map((frame, index) => (
          <li
            key={index}
            className={`item frame-${frame.direction}`}
            data-testid="frame"
            data-direction={frame.direction}
            data-opcode={frame.opcode}
          >
            <div className="item-head">
              <span className="badge">{frame.direction === 'sent' ? '→ sent' : '← received'}</span>
              <strong>{frame.opcode}</strong>
              <span className="muted">
                {frame.size} bytes{frame.truncated ? ', cut' : ''}
              </span>
            </div>
            {frame.text !== null && <pre className="item-text">{frame.text}</pre>}
            {frame.text === null && frame.hex !== null && <pre className="item-args">{frame.hex}</pre>}
          </li>
        ))}
      </ol>
    </section>
  );
}
