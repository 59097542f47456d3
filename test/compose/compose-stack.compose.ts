/**
 * The docker-compose deployment on real containers (issue 41): docker/docker-compose.yml with
 * docker-compose.local.yml over it, its images built on this machine by the code behind `npm run
 * compose:up` (packages/devcluster/src/compose), run as a project of its own (never the user's `mink`
 * stack) with the gateway published on free loopback ports and the short lease of the other fault tests.
 * The stack: 3 NATS servers (metadata at 3 replicas), s3rver, 2 coordinators, 3 data nodes, 2 tiering
 * workers, the gateway and Prometheus.
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
