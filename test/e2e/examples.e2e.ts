/**
 * The client example of docs/client.md runs as documented against a cluster started like `mink up` (it reads
 * the NATS address from cluster.json): it creates a table, appends two rows (one beyond 2^53), scans
 * them back exactly and drops the table.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { LocalCluster } from '@mink/devcluster';
import { temporaryDirectory } from './helpers';

jest.setTimeout(120_000);

describe('examples/client.cjs', () => {
  const directory = temporaryDirectory('example');
  let cluster: LocalCluster | null = null;

  afterAll(async () => {
    await cluster?.stop();
    directory.remove();
  });

  it('creates, appends, scans and drops through the client', async () => {
    cluster = await LocalCluster.start({ dataDir: directory.path, nodes: 3, coordinators: 1, gatewayPort: 0, kafkaPort: 0, leaseTtlMs: 3_000, coordinatorTickMs: 500 });
    const { stdout } = await promisify(execFile)('node', [join(__dirname, '..', '..', 'examples', 'client.cjs'), directory.path], { timeout: 60_000 });
    expect(stdout).toMatch(/^appended \{"appended":2,/m);
    expect(stdout).toContain('{"id":"1","name":"one"}');
    expect(stdout).toContain('{"id":"9007199254740993","name":"beyond 2^53"}');
  });
});
