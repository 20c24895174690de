import Markdown, { type Components } from 'react-markdown';
import remarkGfm from 'remark-gfm';

// A model's answer as markdown (GitHub's flavour: tables, task lists, strikethrough). The text is
// the guest's, so hostile: raw HTML is dropped, and nothing in it can make the window fetch or
// navigate: a link shows its text, its address on hover; an image only its description.
const COMPONENTS: Components = {
  a: ({ children, href }) => (
    <span className="md-link" title={href}>
      {children}
    </span>
  ),
  img: ({ alt }) => <span className="muted">[image{alt ? `: ${alt}` : ''}]</span>,
};

const PLUGINS = [remarkGfm];

export function ModelMarkdown({ text }: { readonly text: string }) {
  return (
    <div className="markdown">
      <Markdown remarkPlugins={PLUGINS} components={COMPONENTS} skipHtml>
        {text}
      </Markdown>
    </div>
  );
}
