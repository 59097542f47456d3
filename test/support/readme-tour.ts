/**
 * The README's five-minute tour as a test can run it (issue 44: docs that cannot drift). The blocks to run are
 * the fenced ```sh tour blocks (```sh tour retry: the block is run again until it passes, for what becomes
 * true only after a while, such as the lake); a `# expect: <text>` comment names text the block's output must
 * contain. Pure: Markdown in, scripts out.
 */

export interface TourBlock {
  /** The block's shell text, comments kept. */
  script: string;
  /** Run again until it passes (within the test's deadline). */
  retry: boolean;
  /** Texts the block's standard output must contain, in the order the block names them. */
  expects: string[];
  /** Line of the opening fence in the Markdown, from 1. */
  line: number;
}

const OPENING = /^```sh\s+tour(\s+retry)?\s*$/;
const EXPECT = /#\s*expect:\s*(.+?)\s*$/;

export function tourBlocks(markdown: string): TourBlock[] {
  const blocks: TourBlock[] = [];
  const lines = markdown.split('\n');
  for (let index = 0; index < lines.length; index++) {
    const opening = OPENING.exec(lines[index]!);
    if (!opening) continue;
    const body: string[] = [];
    const line = index + 1;
    for (index++; index < lines.length && !/^```\s*$/.test(lines[index]!); index++) body.push(lines[index]!);
    if (index === lines.length) throw new Error(`the tour block at line ${line} is not closed`);
    const expects = body.flatMap((text) => {
      const expect = EXPECT.exec(text);
      return expect ? [expect[1]!] : [];
    });
    blocks.push({ script: body.join('\n'), retry: opening[1] !== undefined, expects, line });
  }
  return blocks;
}

export interface TourCluster {
  /** The gateway's base URL, e.g. `http://127.0.0.1:41234`. */
  gatewayUrl: string;
  /** One Kafka listener, `host:port`. */
  kafkaAddress: string;
  /** The command that runs the built `mink` CLI, e.g. `node /repo/packages/cli/dist/main.js`. */
  mink: string;
}

/**
 * The block as it runs against a cluster on other ports than `mink up`'s defaults: the README's gateway
 * (http://127.0.0.1:8080) and Kafka (127.0.0.1:9092) addresses become the cluster's, `pnpm mink` the built CLI.
 */
export function scriptForCluster(script: string, cluster: TourCluster): string {
  return script
    .replace(/http:\/\/127\.0\.0\.1:8080/g, cluster.gatewayUrl)
    .replace(/127\.0\.0\.1:9092/g, cluster.kafkaAddress)
    .replace(/\bpnpm mink\b/g, cluster.mink);
}

/** What is wrong with a block's output, or null: a missing expected text, or an error answer of the API. */
export function tourOutputProblem(block: TourBlock, stdout: string): string | null {
  const apiError = /\{"error":\{"code":"[A-Za-z]+"[^\n]*/.exec(stdout);
  if (apiError) return `the API answered an error: ${apiError[0]}`;
  const missing = block.expects.filter((text) => !stdout.includes(text));
  return missing.length === 0 ? null : `the output lacks ${missing.map((text) => JSON.stringify(text)).join(', ')}`;
}
