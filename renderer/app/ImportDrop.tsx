import { useCallback, useEffect, useRef, useState } from 'react';
import { useApi, useImportFile } from '../api/ApiContext.tsx';
import { errorText } from '../api/callError.ts';
import type { SessionSummary } from '../../electron/contract/appContract.ts';

// Import by drag-and-drop onto the window, or with the Import… button (a file picker, for the
// keyboard and for tests). Each file becomes a new read-only session whose tab opens; a file the
// importer refuses is named in a dismissible bar with the importer's reason.

export interface ImportProblem {
  readonly key: number;
  readonly file: string;
  readonly message: string;
}

export interface FileImport {
  /** The file being imported now, or null. */
  readonly busy: string | null;
  readonly problems: readonly ImportProblem[];
  readonly importFiles: (files: readonly File[]) => void;
  readonly dismiss: (key: number) => void;
}

/** Imports files one after another; each imported session is put in the list and its tab opened. */
export function useFileImport(onImported: (id: string) => void, onSummary: (session: SessionSummary) => void): FileImport {
  const api = useApi();
  const importFile = useImportFile();
  const [busy, setBusy] = useState<string | null>(null);
  const [problems, setProblems] = useState<readonly ImportProblem[]>([]);
  const queue = useRef(Promise.resolve());
  const nextKey = useRef(1);
  const latest = useRef({ onImported, onSummary });
  useEffect(() => {
    latest.current = { onImported, onSummary };
  });

  const importFiles = useCallback(
    (files: readonly File[]) => {
      for (const file of files) {
        queue.current = queue.current.then(async () => {
          setBusy(file.name);
          try {
            const { id } = await importFile(file);
            // The list learns of it from session.changed too; this puts it in before the tab shows.
            const summary = await api.call('sessions.info', { id }).catch(() => null);
            if (summary) latest.current.onSummary(summary);
            latest.current.onImported(id);
          } catch (e) {
            const key = nextKey.current++;
            setProblems((current) => [...current, { key, file: file.name, message: errorText(e) }]);
          } finally {
            setBusy(null);
          }
        });
      }
    },
    [api, importFile],
  );

  const dismiss = useCallback((key: number) => setProblems((current) => current.filter((p) => p.key !== key)), []);
  return { busy, problems, importFiles, dismiss };
}

function carriesFiles(event: DragEvent): boolean {
  return event.dataTransfer?.types.includes('Files') ?? false;
}

/** The overlay shown while files are dragged over the window; dropping them imports them. */
export function DropOverlay({ onFiles }: { readonly onFiles: (files: readonly File[]) => void }) {
  const [dragging, setDragging] = useState(false);
  const latest = useRef(onFiles);
  useEffect(() => {
    latest.current = onFiles;
  });

  useEffect(() => {
    // dragenter/dragleave fire for every element crossed: count them so the overlay stays up.
    let depth = 0;
    const enter = (e: DragEvent) => {
      if (!carriesFiles(e)) return;
      e.preventDefault();
      depth += 1;
      setDragging(true);
    };
    const over = (e: DragEvent) => {
      if (!carriesFiles(e)) return;
      // Without this the drop would navigate the window to the file.
      e.preventDefault();
      if (e.dataTransfer) e.dataTransfer.dropEffect = 'copy';
    };
    const leave = (e: DragEvent) => {
      if (!carriesFiles(e)) return;
      depth = Math.max(0, depth - 1);
      if (depth === 0) setDragging(false);
    };
    const drop = (e: DragEvent) => {
      if (!carriesFiles(e)) return;
      e.preventDefault();
      depth = 0;
      setDragging(false);
      const files = [...(e.dataTransfer?.files ?? [])];
      if (files.length > 0) latest.current(files);
    };
    window.addEventListener('dragenter', enter);
    window.addEventListener('dragover', over);
    window.addEventListener('dragleave', leave);
    window.addEventListener('drop', drop);
    return () => {
      window.removeEventListener('dragenter', enter);
      window.removeEventListener('dragover', over);
      window.removeEventListener('dragleave', leave);
      window.removeEventListener('drop', drop);
    };
  }, []);

  if (!dragging) return null;
  return (
    <div className="drop-overlay" data-testid="drop-overlay" aria-hidden="true">
      <div className="drop-message">Drop a .capsem archive or a session.db to import</div>
    </div>
  );
}

/** The Import… button: a file picker for the same import (keyboard users, tests). */
export function ImportButton({ busy, onFiles }: { readonly busy: boolean; readonly onFiles: (files: readonly File[]) => void }) {
  const input = useRef<HTMLInputElement>(null);
  return (
    <>
      <button
        type="button"
        data-testid="import"
        disabled={busy}
        title="Import a .capsem archive or a session.db (or drop one on the window)"
        onClick={() => input.current?.click()}
      >
        {busy ? 'Importing…' : 'Import…'}
      </button>
      <input
        ref={input}
        type="file"
        multiple
        hidden
        data-testid="import-file"
        aria-label="Import a session archive or session.db"
        onChange={(e) => {
          const files = [...(e.target.files ?? [])];
          // Cleared so picking the same file again imports it again.
          e.target.value = '';
          if (files.length > 0) onFiles(files);
        }}
      />
    </>
  );
}

/** Import progress and refusals, each dismissible. */
export function ImportBar({ state }: { readonly state: FileImport }) {
  if (state.busy === null && state.problems.length === 0) return null;
  return (
    <div className="import-bar" data-testid="import-bar">
      {state.busy !== null && (
        <div className="import-busy muted" data-testid="import-busy">
          Importing {state.busy}…
        </div>
      )}
      {state.problems.map((p) => (
        <div key={p.key} className="import-problem" role="alert" data-testid="import-error">
          <span className="error">
            Could not import <strong>{p.file}</strong>: {p.message}
          </span>
          <button
            type="button"
            className="dismiss"
            aria-label="dismiss"
            data-testid="import-error-dismiss"
            onClick={() => state.dismiss(p.key)}
          >
            ×
          </button>
        </div>
      ))}
    </div>
  );
}
