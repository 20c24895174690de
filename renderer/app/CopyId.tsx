import { useState } from 'react';
import { shortId } from './format.ts';

/** A short id that shows the full id on hover and copies it on click (without opening the row). */
export function CopyId({ id }: { readonly id: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <button
      type="button"
      className="copy-id"
      title={`${id}\nclick to copy`}
      data-testid="copy-id"
      onClick={(e) => {
        e.stopPropagation();
        void navigator.clipboard?.writeText(id).then(() => {
          setCopied(true);
          setTimeout(() => setCopied(false), 1200);
        });
      }}
    >
      <code>{shortId(id)}</code>
      {copied && <span className="copied">copied</span>}
    </button>
  );
}
