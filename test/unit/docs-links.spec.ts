import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { headingSlug, pageAnchors, relativeLinks } from './markdown-links';

const ROOT = resolve(__dirname, '../..');

describe('relativeLinks', () => {
  it.each([
    ['a [page](docs/lake.md) link', [{ path: 'docs/lake.md', anchor: null, line: 1 }]],
    ['an [anchor](ops.md#docker) and an ![image](console.png)', [
      { path: 'ops.md', anchor: 'docker', line: 1 },
      { path: 'console.png', anchor: null, line: 1 },
    ]],
    ['[same page](#metrics)', [{ path: '', anchor: 'metrics', line: 1 }]],
    ['[site](https://example.com/x.md) and [mail](mailto:a@b.c)', []],
    ['`[in code](nowhere.md)` is not a link', []],
    ['```\n[in a fence](nowhere.md)\n```\n[after](there.md)', [{ path: 'there.md', anchor: null, line: 4 }]],
    ['[spaced](my%20file.md "title")', [{ path: 'my file.md', anchor: null, line: 1 }]],
  ])('%s', (markdown, links) => {
    expect(relativeLinks(markdown)).toEqual(links);
  });
});

describe('headingSlug and pageAnchors', () => {
  it.each([
    ['Kafka clients', 'kafka-clients'],
    ['The `mink` command', 'the-mink-command'],
    ['Operations: configuration, authentication, TLS', 'operations-configuration-authentication-tls'],
    ['Acknowledged records across a leader failure', 'acknowledged-records-across-a-leader-failure'],
    ['1. Processes', '1-processes'],
    ['Lake (Apache Iceberg)', 'lake-apache-iceberg'],
  ])('%s -> %s', (heading, slug) => {
    expect(headingSlug(heading.replace(/`/g, ''))).toBe(slug);
  });

  it('numbers repeated headings and takes explicit anchors, never what is in a fence', () => {
    const anchors = pageAnchors('# Figures\n## Figures\n<a id="run-7"></a>\n```\n# not a heading\n```\n## The `up` command');
    expect([...anchors].sort()).toEqual(['figures', 'figures-1', 'run-7', 'the-up-command']);
  });
});

function markdownPages(): string[] {
  const docs = join(ROOT, 'docs');
  return [join(ROOT, 'README.md'), ...readdirSync(docs).filter((f) => f.endsWith('.md')).map((f) => join(docs, f))];
}

describe('README.md and docs/', () => {
  const pages = markdownPages();

  it('has the pages the README links to', () => {
    expect(pages.length).toBeGreaterThan(5);
  });

  it.each(pages.map((page) => [relative(ROOT, page), page]))('%s: every relative link resolves', (_name, page) => {
    const broken: string[] = [];
    for (const link of relativeLinks(readFileSync(page, 'utf8'))) {
      const target = link.path === '' ? page : resolve(dirname(page), link.path);
      if (!existsSync(target)) {
        broken.push(`line ${link.line}: ${link.path} does not exist`);
        continue;
      }
      if (link.anchor === null || !target.endsWith('.md') || statSync(target).isDirectory()) continue;
      if (!pageAnchors(readFileSync(target, 'utf8')).has(link.anchor)) {
        broken.push(`line ${link.line}: ${link.path || relative(ROOT, page)} has no heading or anchor #${link.anchor}`);
      }
    }
    expect(broken).toEqual([]);
  });
});
