/**
 * The docker-compose deployment on real containers (issue 41): docker/docker-compose.yml with
 * docker-compose.local.yml over it, its images built on this machine by the code behind `npm run
 * compose:up` (packages/devcluster/src/compose), run as a project of its own (never the user's `mink`
 * stack) with the gateway published on free loopback ports and the short lease of the other fault tests.
 * The stack: 3 NATS servers (metadata at 3 replicas), s3rver, 2 coordinators, 3 data nodes, 2 tiering
 * workers, the gateway and Prometheus. Under appends through the published gateway: `docker kill` of a data
 * node, of the coordinator lease holder and of a NATS server; the lake read back with DuckDB; data nodes
 * scaled 3 → 5 and rebalanced; a rolling restart of every data node with no client-visible error; a kcat
 * container producing and consuming; `down` and `up` again with the volumes.
 *
 * Network discipline: the test talks to 127.0.0.1 (the published ports) and to the stack's own containers
 * through containers it runs on the stack's network; nothing else. Afterwards nothing of the stack is left:
 * no container, network or volume of the project (and dockerd is stopped if the test started it).
 */
import { randomBytes } from 'node:crypto';
import { join, resolve } from 'node:path';
import {
  COMPOSE_FILES,
  composeDownArguments,
  composeUp,
  ensureContextlessImage,
  ensureDockerTools,
  freePort,
  generatedTokensFile,
  runCompose,
  runTool,
  stateDirOf,
  stopStartedDockerDaemon,
  writeTokensFileForContainers,
  type ComposeOptions,
  type DockerTools,
} from '@mink/devcluster';
import { eventually, http, temporaryDirectory } from '../e2e/helpers';
import { lakeSelect } from '../e2e/lake';
import { AcknowledgementClock, AppendLoad, LOAD_COLUMNS, expectAcknowledgedExactlyOnce, gatewayAppender, storedIds } from '../e2e/load';

jest.setTimeout(15 * 60_000);

const ROOT = resolve(__dirname, '..', '..');
/** A project of the test's own: its containers, network and volumes are named after it, apart from the user's `mink`. */
const PROJECT = `minktest${process.pid}`;
const LEASE_TTL_MS = 3_000;
const COORDINATOR_TICK_MS = 500;
const BUCKETS = 6;

describe(`the compose stack (${COMPOSE_FILES.base} with ${COMPOSE_FILES.local}) on real containers`, () => {
  const directory = temporaryDirectory('compose');
  const token = randomBytes(24).toString('hex');
  const progress: string[] = [];
  let options: ComposeOptions;
  let tools: DockerTools;
  let gateway: string;

  /** Runs `docker <args>` and resolves with its standard output. */
  async function docker(args: string[], input?: string): Promise<string> {
    return (await runTool(tools.docker, args, { input, timeoutMs: 120_000 })).stdout;
  }

  beforeAll(async () => {
    const tokensFile = join(directory.path, 'tokens.json');
    writeTokensFileForContainers(tokensFile, generatedTokensFile(token), () => undefined);
    const [httpPort, grpcPort, prometheusPort] = [await freePort(), await freePort(), await freePort()];
    gateway = `http://127.0.0.1:${httpPort}`;
    options = {
      root: ROOT,
      source: 'local',
      project: PROJECT,
      env: {
        ...process.env,
        MINK_TOKENS_FILE: tokensFile,
        MINK_PUBLISH_HOST: '127.0.0.1',
        MINK_PUBLISH_HTTP_PORT: String(httpPort),
        MINK_PUBLISH_GRPC_PORT: String(grpcPort),
        MINK_PUBLISH_PROMETHEUS_PORT: String(prometheusPort),
        MINK_LEASE_TTL_MS: String(LEASE_TTL_MS),
        MINK_COORDINATOR_TICK_MS: String(COORDINATOR_TICK_MS),
      },
      log: (line) => {
        progress.push(line);
        process.stderr.write(`compose: ${line}\n`);
      },
    };
    await composeUp([], options);
    tools = await ensureDockerTools(options.log);
  });

  afterAll(async () => {
    if (tools !== undefined) {
      await runCompose(tools, options, composeDownArguments(false)).catch((error: Error) => options.log(`down failed: ${error.message}`));
      // Nothing of the stack is left: no container, network or volume of the project.
      const label = `label=com.docker.compose.project=${PROJECT}`;
      const left = [
        ...(await docker(['ps', '-aq', '--filter', label])).split('\n'),
        ...(await docker(['network', 'ls', '-q', '--filter', label])).split('\n'),
        ...(await docker(['volume', 'ls', '-q', '--filter', label])).split('\n'),
      ].filter((id) => id !== '');
      expect(left).toEqual([]);
    }
    await stopStartedDockerDaemon(stateDirOf(ROOT), options.log);
    directory.remove();
  });

  it('kill -9 of a data node container under appends through the published gateway: every acknowledged row exactly once, ack gap within lease_ttl + tick + 2 s', async () => {
    const created = await http(gateway, 'POST', '/v1/tables', { name: 'orders', columns: LOAD_COLUMNS, buckets: BUCKETS }, token);
    expect(created.status).toBe(201);
    const load = new AppendLoad(gatewayAppender(gateway, token), 'orders', { lanes: 4, batchRows: 20, callsMax: 100_000, pauseMs: 20 });
    const clock = new AcknowledgementClock(() => load.acknowledged.size);
    load.start();
    try {
      await load.advance(400, 120_000);
      // The leader of bucket 0: a node id is its container's hostname, Docker's short container id.
      const described = await http(gateway, 'GET', '/v1/tables/orders', undefined, token);
      const victim = (described.body.bucketLeaders as { bucket: number; leader: string }[]).find((leader) => leader.bucket === 0)!.leader;
      await docker(['kill', '--signal', 'KILL', victim]);
      const killedAt = Date.now();
      await load.advance(400, 120_000);
      const gapMs = clock.longestStallMs(killedAt);
      options.log(`acknowledgements stalled at most ${gapMs} ms after kill -9 of ${victim}`);
      expect(gapMs).toBeLessThanOrEqual(LEASE_TTL_MS + COORDINATOR_TICK_MS + 2_000);
    } finally {
      await load.stop();
      clock.stop();
    }
    expectAcknowledgedExactlyOnce(load, await storedIds(gateway, 'orders', BUCKETS, token));
  });

  it('kill -9 of the coordinator lease holder: a coordinator takes the lease at a higher epoch and carries out a create', async () => {
    const before = (await http(gateway, 'GET', '/v1/cluster', undefined, token)).body.coordinator as { node: string; epoch: number };
    await docker(['kill', '--signal', 'KILL', before.node]);
    // The standby takes the lease once it runs out, or the killed container, restarted by Docker, wins it back:
    // either way at a higher epoch.
    const after = await eventually('a coordinator at a higher epoch', async () => {
      const coordinator = (await http(gateway, 'GET', '/v1/cluster', undefined, token)).body.coordinator as { node: string; epoch: number } | null;
      return coordinator !== null && coordinator.epoch > before.epoch ? coordinator : undefined;
    }, 60_000);
    options.log(`coordinator lease: ${before.node} at epoch ${before.epoch}, then ${after.node} at epoch ${after.epoch}`);
    expect((await http(gateway, 'POST', '/v1/tables', { name: 'after_coordinator', columns: LOAD_COLUMNS, buckets: 2 }, token)).status).toBe(201);
  });

  it('kill -9 of one NATS server under appends: appends go on, every acknowledged row exactly once', async () => {
    expect((await http(gateway, 'POST', '/v1/tables', { name: 'through_nats', columns: LOAD_COLUMNS, buckets: BUCKETS }, token)).status).toBe(201);
    const load = new AppendLoad(gatewayAppender(gateway, token), 'through_nats', { lanes: 4, batchRows: 20, callsMax: 100_000, pauseMs: 20 });
    load.start();
    const server = `${PROJECT}_nats-2_1`;
    try {
      await load.advance(200, 120_000);
      await docker(['kill', '--signal', 'KILL', server]);
      await load.advance(400, 120_000);
    } finally {
      await load.stop();
    }
    expectAcknowledgedExactlyOnce(load, await storedIds(gateway, 'through_nats', BUCKETS, token));
    // Back to three servers for what follows (Docker may have restarted it already).
    await docker(['start', server]);
  });

  it('the tiering workers write the lake, and DuckDB reads every row back from it', async () => {
    const table = 'lake_clicks';
    const properties = { 'table.datalake.enabled': 'true', 'table.datalake.freshness': '1s' };
    expect((await http(gateway, 'POST', '/v1/tables', { name: table, columns: LOAD_COLUMNS, buckets: 3, properties }, token)).status).toBe(201);
    const rows = 500;
    for (let first = 0; first < rows; first += 50) {
      const rowsOfCall = Array.from({ length: 50 }, (_unused, index) => ({ id: first + index, lane: 'lake' }));
      expect((await http(gateway, 'POST', `/v1/tables/${table}/append`, { rows: rowsOfCall }, token)).status).toBe(200);
    }
    const lake = await eventually('the lake to hold every row', async () => {
      const described = (await http(gateway, 'GET', `/v1/tables/${table}`, undefined, token)).body as { lake?: { metadataKey: string | null; offsets: { offset: number }[] } };
      const tiered = (described.lake?.offsets ?? []).reduce((sum, each) => sum + each.offset, 0);
      return tiered === rows ? described.lake! : undefined;
    }, 120_000);
    // The S3 server is reached at its container's address on the stack's network, as its other clients do.
    const s3Address = (await docker(['inspect', '-f', '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}', `${PROJECT}_minio_1`])).trim();
    const read = await lakeSelect(`http://${s3Address}:9000`, table, LOAD_COLUMNS, [], lake.metadataKey, 'id, __bucket, __offset');
    expect(read.rows.map((row) => Number(row.id)).sort((a, b) => a - b)).toEqual(Array.from({ length: rows }, (_unused, index) => index));
  });

  it('scales the data nodes 3 → 5: a new table spreads onto the new ones, rebalance moves buckets, nothing is lost', async () => {
    const before = await storedIds(gateway, 'orders', BUCKETS, token);
    const nodes = async (): Promise<{ id: string; live: boolean }[]> => (await http(gateway, 'GET', '/v1/cluster', undefined, token)).body.nodes;
    // Every node the view knows, live or not: the container killed above may be down (compose starts it again).
    const known = (await nodes()).map((node) => node.id);
    await composeUp(['--scale', 'data-node=5'], options);
    const added = await eventually('five live data nodes', async () => {
      const live = (await nodes()).filter((node) => node.live).map((node) => node.id);
      return live.length === 5 ? live.filter((node) => !known.includes(node)) : undefined;
    }, 60_000);
    expect(added).toHaveLength(2);
    const created = await http(gateway, 'POST', '/v1/tables', { name: 'spread', columns: LOAD_COLUMNS, buckets: 10 }, token);
    expect(created.status).toBe(201);
    const leaders = new Set((created.body.bucketLeaders as { leader: string }[]).map((bucket) => bucket.leader));
    expect(added.every((node) => leaders.has(node))).toBe(true);
    const rebalanced = await http(gateway, 'POST', '/v1/cluster/rebalance', undefined, token);
    expect(rebalanced.status).toBe(200);
    expect((rebalanced.body.moves as unknown[]).length).toBeGreaterThan(0);
    await eventually('every row of orders where it was', async () => {
      const after = await storedIds(gateway, 'orders', BUCKETS, token).catch(() => null);
      return after !== null && after.size === before.size && [...before].every(([id, count]) => after.get(id) === count);
    }, 60_000);
  });

  it('a rolling restart of every data node (docker restart: SIGTERM, hand-off) under appends: no client sees an error, every acknowledged row once', async () => {
    expect((await http(gateway, 'POST', '/v1/tables', { name: 'rolling', columns: LOAD_COLUMNS, buckets: BUCKETS }, token)).status).toBe(201);
    const load = new AppendLoad(gatewayAppender(gateway, token), 'rolling', { lanes: 4, batchRows: 20, callsMax: 100_000, pauseMs: 0 });
    const containers = (await docker(['ps', '-q', '--filter', `label=com.docker.compose.project=${PROJECT}`, '--filter', 'label=com.docker.compose.service=data-node'])).split('\n').filter((id) => id !== '');
    expect(containers.length).toBe(5);
    load.start();
    try {
      await load.advance(200, 120_000);
      for (const container of containers) {
        await docker(['restart', '-t', '30', container]);
        await eventually(`${container} healthy again`, async () => (await docker(['inspect', '-f', '{{.State.Health.Status}}', container])).trim() === 'healthy', 120_000).catch(async (error: Error) => {
          // What the container and its health checks said, so a failure here can be diagnosed from the CI log.
          const health = await docker(['inspect', '-f', '{{.State.Status}} restarts={{.RestartCount}} {{json .State.Health}}', container]).catch((cause: Error) => cause.message);
          const logs = await docker(['logs', '--tail', '40', container]).catch((cause: Error) => cause.message);
          throw new Error(`${error.message}\nstate: ${health}\nlast log lines:\n${logs}`);
        });
        // Buckets back onto the restarted node, so that every restart hands buckets off.
        expect((await http(gateway, 'POST', '/v1/cluster/rebalance', undefined, token)).status).toBe(200);
        await load.advance(200, 120_000);
      }
    } finally {
      await load.stop();
    }
    expect(load.errors).toEqual([]);
    expectAcknowledgedExactlyOnce(load, await storedIds(gateway, 'rolling', BUCKETS, token));
  });

  it('a kcat container on the compose network produces to a new topic and consumes it through the advertised addresses', async () => {
    const kcat = await ensureContextlessImage(
      tools,
      { repository: 'mink-local/kcat', dockerfilePath: join(__dirname, 'kcat.Dockerfile'), baseArgument: 'BASE_IMAGE', baseTag: 'mink-local/debian:latest' },
      stateDirOf(ROOT),
      options.log,
    );
    const network = `${PROJECT}_default`;
    const values = Array.from({ length: 100 }, (_unused, index) => `click-${index}`);
    await docker(['run', '--rm', '-i', '--network', network, kcat, '-b', 'data-node:9092', '-P', '-t', 'clicks'], `${values.join('\n')}\n`);
    const consumed = await docker(['run', '--rm', '--network', network, kcat, '-b', 'data-node:9092', '-C', '-t', 'clicks', '-o', 'beginning', '-e', '-q']);
    expect(consumed.split('\n').filter((line) => line !== '').sort()).toEqual([...values].sort());
  });

  it('down and up again with the volumes: every table and row is back', async () => {
    const before = await storedIds(gateway, 'orders', BUCKETS, token);
    await runCompose(tools, options, composeDownArguments(true));
    await composeUp([], options);
    const tables = await http(gateway, 'GET', '/v1/tables', undefined, token);
    expect((tables.body.tables as { name: string }[]).map((table) => table.name).sort()).toEqual(expect.arrayContaining(['clicks', 'orders']));
    // The new containers are new nodes: the buckets are re-led from the old ids once their lease runs out.
    await eventually('every row of orders back', async () => {
      const after = await storedIds(gateway, 'orders', BUCKETS, token).catch(() => null);
      return after !== null && after.size === before.size && [...before].every(([id, count]) => after.get(id) === count);
    }, 120_000);
  });
});
