import { useEffect, useRef, useState, type RefObject } from 'react';

/** A container's width, kept current: SVG charts draw in pixels so their text never stretches. */
export function useElementWidth<T extends HTMLElement>(): [RefObject<T | null>, number] {
  const ref = useRef<T>(null);
  const [width, setWidth] = useState(0);
  useEffect(() => {
    const element = ref.current;
    if (!element) return;
    const observer = new ResizeObserver((entries) => {
      // The content box (padding excluded), so the SVG fits; hidden panes measure 0: keep the
      // last real width instead of collapsing the chart.
      const content = entries[0]?.contentRect.width ?? 0;
      if (content > 0) setWidth(Math.floor(content));
    });
    observer.observe(element);
    return () => observer.disconnect();
  }, []);
  return [ref, width];
}
