// A runnable example of the TypeScript client (packages/client), in plain JavaScript.
//
//   npm run up                        # in one terminal: a local cluster in ./.mink
//   node examples/client.cjs [.mink]  # in another: create a table, append, scan, drop
//
// It reads the NATS address from {dataDir}/cluster.json, which `mink up` writes.
const { readFileSync } = require('node:fs');
const { join } = require('node:path');
const { MinkClient } = require('@mink/client');

async function main() {
  const dataDir = process.argv[2] ?? '.mink';
  const cluster = JSON.parse(readFileSync(join(dataDir, 'cluster.json'), 'utf8'));
  const nats = cluster.processes.find((process) => process.role === 'nats');
  const client = await MinkClient.connect({ servers: `nats://127.0.0.1:${nats.ports.client}` });
  const name = `example_${Date.now()}`;
  try {
    await client.createTable({
      name,
      columns: [
        { name: 'id', type: 'int64' },
        { name: 'name', type: 'string' },
      ],
      bucketKey: ['id'],
      buckets: 4,
    });
    const table = client.table(name);
    const appended = await table.append([
      { id: 1, name: 'one' },
      { id: '9007199254740993', name: 'beyond 2^53' },
    ]);
    console.log('appended', JSON.stringify(appended));
    for (const { bucket } of appended.buckets) {
      const scanned = await table.scan({ bucket, offset: 0, limit: 10 });
      for (const record of scanned.records) console.log('bucket', bucket, 'offset', record.offset, JSON.stringify(record.row));
    }
    await client.dropTable(name);
  } finally {
    await client.close();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
