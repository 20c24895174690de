// The Timeline's keys, for a person who never touches the mouse. Chords with Ctrl, Meta or Alt are
// left to the browser and the window (Ctrl+0, Ctrl+F, Alt+← mean other things there).

export type KeyAction =
  | { readonly kind: 'zoom'; readonly factor: number }
  | { readonly kind: 'fit-all' }
  | { readonly kind: 'fit-selection' }
  /** Zoom to all the selected span's agent (or host) did. */
  | { readonly kind: 'fit-lane' }
  /** Pan by a share of the view's width: negative goes earlier. */
  | { readonly kind: 'pan'; readonly share: number }
  /** To the session's start or end, keeping the zoom. */
  | { readonly kind: 'edge'; readonly to: 'start' | 'end' }
  /** Select the nearest span in the row above or below. */
  | { readonly kind: 'row'; readonly step: -1 | 1 }
  /** Select the span before or after the selected one in its row. */
  | { readonly kind: 'span'; readonly step: -1 | 1 }
  /** Scroll the lanes by a page. */
  | { readonly kind: 'page'; readonly step: -1 | 1 }
  | { readonly kind: 'open' }
  | { readonly kind: 'clear' };

export const ZOOM_STEP = 1.6;

/** The action for a key pressed on the timeline, or null to let it through. */
export function keyAction(event: Pick<KeyboardEvent, 'key' | 'shiftKey' | 'ctrlKey' | 'metaKey' | 'altKey'>): KeyAction | null {
  if (event.ctrlKey || event.metaKey || event.altKey) return null;
  switch (event.key) {
    case '+':
    case '=':
      return { kind: 'zoom', factor: 1 / ZOOM_STEP };
    case '-':
    case '_':
      return { kind: 'zoom', factor: ZOOM_STEP };
    case '0':
      return { kind: 'fit-all' };
    case 'f':
    case 'F':
      return { kind: 'fit-selection' };
    case 'a':
    case 'A':
      return { kind: 'fit-lane' };
    case 'ArrowLeft':
      return { kind: 'pan', share: event.shiftKey ? -0.8 : -0.15 };
    case 'ArrowRight':
      return { kind: 'pan', share: event.shiftKey ? 0.8 : 0.15 };
    case 'Home':
      return { kind: 'edge', to: 'start' };
    case 'End':
      return { kind: 'edge', to: 'end' };
    case 'ArrowUp':
      return { kind: 'row', step: -1 };
    case 'ArrowDown':
      return { kind: 'row', step: 1 };
    case '[':
      return { kind: 'span', step: -1 };
    case ']':
      return { kind: 'span', step: 1 };
    case 'PageUp':
      return { kind: 'page', step: -1 };
    case 'PageDown':
      return { kind: 'page', step: 1 };
    case 'Enter':
      return { kind: 'open' };
    case 'Escape':
      return { kind: 'clear' };
    default:
      return null;
  }
}

/** How the keys and the pointer work, as the view says it to a screen reader and in its help line. */
export const TIMELINE_HELP =
  'Wheel or pinch zooms at the pointer, drag or Shift+wheel pans, Shift+drag or a drag on the axis selects a range. ' +
  'Keys: + and − zoom, 0 shows everything, F zooms to the selection, A to all its agent did, ← → pan, ' +
  '↑ ↓ select a span in the row above or below, [ ] the previous or next span in its row, Enter opens it, Escape clears. ' +
  "Click an agent's or host's name to zoom to its spans.";
