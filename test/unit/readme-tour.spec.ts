import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { scriptForCluster, tourBlocks, tourOutputProblem } from '../support/readme-tour';

describe('tourBlocks', () => {
  it.each([
    ['no tour block', '```sh\nnpm test\n```', []],
    ['one block with an expectation', 'text\n```sh tour\ncurl -s x   # expect: "appended":3\n```', [
      { script: 'curl -s x   # expect: "appended":3', retry: false, expects: ['"appended":3'], line: 2 },
    ]],
    ['a retried block, two expectations', '```sh tour retry\na # expect: one\nb\nc #expect: two \n```', [
      { script: 'a # expect: one\nb\nc #expect: two ', retry: true, expects: ['one', 'two'], line: 1 },
    ]],
    ['blocks of other languages stay out', '```ts\nx\n```\n```sh tour\ny\n```', [{ script: 'y', retry: false, expects: [], line: 4 }]],
  ])('%s', (_name, markdown, blocks) => {
    expect(tourBlocks(markdown)).toEqual(blocks);
  });

  it('refuses a block that is never closed', () => {
    expect(() => tourBlocks('```sh tour\ncurl')).toThrow('the tour block at line 1 is not closed');
  });

  it('finds the README tour: curl, mink, Kafka and the lake, each with something to check', () => {
    const blocks = tourBlocks(readFileSync(join(__dirname, '..', '..', 'README.md'), 'utf8'));
    const all = blocks.map((block) => block.script).join('\n');
    for (const tool of ['curl', 'pnpm mink append', 'pnpm mink scan', 'kcat', 'pnpm mink lake query']) expect(all).toContain(tool);
    expect(blocks.filter((block) => block.expects.length === 0)).toEqual([]);
  });
});

describe('scriptForCluster', () => {
  const cluster = { gatewayUrl: 'http://127.0.0.1:41000', kafkaAddress: '127.0.0.1:42000', mink: 'node /r/cli.js' };
  it.each([
    ["curl -s 'http://127.0.0.1:8080/v1/tables/e/scan?bucket=0'", "curl -s 'http://127.0.0.1:41000/v1/tables/e/scan?bucket=0'"],
    ['kcat -b 127.0.0.1:9092 -P -t clicks', 'kcat -b 127.0.0.1:42000 -P -t clicks'],
    ['echo x | pnpm mink put balances', 'echo x | node /r/cli.js put balances'],
    ['pnpm minky stays', 'pnpm minky stays'],
  ])('%s', (script, expected) => {
    expect(scriptForCluster(script, cluster)).toBe(expected);
  });
});

describe('tourOutputProblem', () => {
  const block = { script: '', retry: false, expects: ['"appended":3', 'three'], line: 1 };
  it.each([
    ['{"appended":3}\none two three', null],
    ['{"appended":2}\nthree', 'the output lacks "\\"appended\\":3"'],
    ['{"error":{"code":"NotFound","message":"no table e"}}', 'the API answered an error: {"error":{"code":"NotFound","message":"no table e"}}'],
  ])('%s', (stdout, problem) => {
    expect(tourOutputProblem(block, stdout)).toBe(problem);
  });
});
