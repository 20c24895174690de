import type { EventDetail } from '../../electron/contract/appContract.ts';

type Item = EventDetail['items'][number];

/** Arguments and request items are JSON; indented they can be read. */
function prettyJson(text: string): string {
  const first = text.trimStart()[0];
  if (first !== '{' && first !== '[') return text;
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

/** A model call's output in the order the model produced it: text, thinking, tool uses. */
export function ModelItems({ items }: { readonly items: readonly Item[] }) {
  return (
    <section>
      <h4>items ({items.length})</h4>
      <ol className="model-items" data-testid="model-items">
        {[...items]
          .sort((a, b) => a.index - b.index)
          .map((item) => (
            <li key={`${item.index}-${item.kind}`} className={`item item-${item.kind}`} data-testid="model-item" data-kind={item.kind}>
              <div className="item-head">
                <span className="badge">{item.kind}</span>
                {item.toolName && <strong>{item.toolName}</strong>}
                {item.callId && <code className="muted">{item.callId}</code>}
              </div>
              {item.content && <pre className="item-text">{prettyJson(item.content)}</pre>}
              {item.arguments && <pre className="item-args">{prettyJson(item.arguments)}</pre>}
            </li>
          ))}
      </ol>
    </section>
  );
}
