/**
 * The relative links of a Markdown page and the anchors it defines, for the check that README.md and docs/
 * never point at a file or a heading that is not there (issue 44). Pure: text in, lists out.
 */

export interface MarkdownLink {
  /** The path part of the link, relative to the page's folder; empty for a link to an anchor of the page itself. */
  path: string;
  /** The part after `#`, or null. */
  anchor: string | null;
  line: number;
}

const FENCE = /^\s*(```|~~~)/;
const INLINE_CODE = /`+[^`]*`+/g;
const LINK = /!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g;
const EXTERNAL = /^[a-z][a-z0-9+.-]*:/i;

/** Lines outside fenced code blocks, with inline code blanked out, numbered from 1. */
function proseLines(markdown: string): Array<{ text: string; raw: string; line: number }> {
  const out: Array<{ text: string; raw: string; line: number }> = [];
  let fenced = false;
  markdown.split('\n').forEach((text, index) => {
    if (FENCE.test(text)) {
      fenced = !fenced;
      return;
    }
    if (!fenced) out.push({ text: text.replace(INLINE_CODE, ''), raw: text, line: index + 1 });
  });
  return out;
}

/** Every link of the page that is not to another site (http:, mailto:, …). */
export function relativeLinks(markdown: string): MarkdownLink[] {
  const links: MarkdownLink[] = [];
  for (const { text, line } of proseLines(markdown)) {
    for (const match of text.matchAll(LINK)) {
      const target = match[1];
      if (EXTERNAL.test(target)) continue;
      const hash = target.indexOf('#');
      links.push({
        path: decodeURI(hash < 0 ? target : target.slice(0, hash)),
        anchor: hash < 0 ? null : target.slice(hash + 1),
        line,
      });
    }
  }
  return links;
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
export function headingSlug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/<[^>]+>/g, '')
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors a page defines: its headings (a repeated one gets -1, -2, … as on GitHub) and `<a id>`s. */
export function pageAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const { text, raw } of proseLines(markdown)) {
    for (const match of text.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(match[1]);
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(raw);
    if (!heading) continue;
    const slug = headingSlug(heading[1]);
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}
