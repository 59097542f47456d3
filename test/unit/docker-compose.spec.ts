import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parse } from 'yaml';
import { DEFAULTS, ENV, LIMITS, NODE_ID_PATTERN, readServiceConfig, type HostFacts } from '@mink/config';
import { COMPOSE_NATS_ROUTE_PORT, COMPOSE_NATS_SERVERS, COMPOSE_NATS_TLS_MOUNTS, COMPOSE_SECRET_FILES, LOCAL_IMAGES, WORKSPACE_EXCLUDES, composeNatsAccessConfig, natsPermissionsOf } from '@mink/devcluster';
import { parseAccessPolicy } from '@mink/http-api';

/**
 * No Docker engine runs on the development machines (docs/architecture.md §13), so docker/docker-compose.yml is kept
 * correct by reading it: every mink service must build an existing Dockerfile target that runs an
 * existing app, set only environment variables the services read, expose the ports it configures, and
 * wait for NATS and MinIO; the three NATS servers must form one JetStream cluster (docker/nats-cluster.conf and the
 * nats-access.conf it includes, generated into the secrets folder); every secret must come from that folder;
 * scalable services must derive each replica's identity; Prometheus must find every replica
 * (docker/prometheus.yml); and only the documented ports may reach the host.
 */

const REPO_ROOT = resolve(__dirname, '..', '..');
const COMPOSE_PATH = join(REPO_ROOT, 'docker', 'docker-compose.yml');
const NATS_CONFIG_PATH = join(REPO_ROOT, 'docker', 'nats-cluster.conf');

/** The ports compose publishes on the host, as docs/operations.md "Docker" documents them: the gateway's HTTP and gRPC APIs, Prometheus on loopback. */
const DOCUMENTED_HOST_PORTS = ['127.0.0.1:8080:8080', '127.0.0.1:50051:50051', '127.0.0.1:9090:9090'];
const LOCAL_COMPOSE_PATH = join(REPO_ROOT, 'docker', 'docker-compose.local.yml');

/**
 * A compose file's text as compose reads it with no variable set: each `${NAME:-default}` is its default.
 * Every variable of the files has one (checked below), so this is what a user without settings runs.
 */
function withVariableDefaults(text: string): string {
  return text.replace(/\$\{([A-Z0-9_]+):-([^}]*)\}/g, (_match, _name: string, fallback: string) => fallback);
}

interface ComposeService {
  image?: string;
  build?: { context?: string; dockerfile?: string; target?: string };
  command?: string | string[];
  entrypoint?: string | string[];
  environment?: Record<string, string | number | boolean | null> | string[];
  ports?: (string | number | { target: number })[];
  expose?: (string | number)[];
  depends_on?: string[] | Record<string, unknown>;
  secrets?: string[];
  env_file?: string[];
  volumes?: string[];
  deploy?: { replicas?: number };
  hostname?: string;
  container_name?: string;
}

interface DockerfileStage {
  name: string;
  base: string;
  command: string[] | null;
  /** Its `ENV NAME=value` settings, the base stage's included. */
  env: Record<string, string>;
}

const COMPOSE_TEXT = readFileSync(COMPOSE_PATH, 'utf8');
const compose = parse(withVariableDefaults(COMPOSE_TEXT), { merge: true }) as {
  services: Record<string, ComposeService>;
  secrets?: Record<string, { file?: string }>;
  volumes?: Record<string, unknown>;
};

/** Services built from this repository's Dockerfile: the mink apps (as opposed to nats, minio, …). */
const minkServices = Object.entries(compose.services).filter(([, service]) => service.build !== undefined);
/** The Node.js flags `mink up` puts on the command line of a role (an image target): DEFAULTS.roleNodeFlags, or none. */
function roleFlagsOf(target: string | undefined): readonly string[] {
  return DEFAULTS.roleNodeFlags[target as keyof typeof DEFAULTS.roleNodeFlags] ?? [];
}

/** The nats-server services: the servers of the NATS cluster. */
const natsServices = Object.entries(compose.services).filter(([, service]) => /^nats:/.test(service.image ?? ''));

/** How many containers `docker compose up` starts for a service (`deploy.replicas`, 1 when absent). */
function replicasOf(service: ComposeService): number {
  return service.deploy?.replicas ?? 1;
}

/**
 * The settings of a nats-server configuration file as `block.key` → value (quoted values unquoted), for the
 * plain `key: value` lines and `name { … }` blocks that docker/nats-cluster.conf uses; comments dropped.
 */
function parseNatsConfig(text: string): Record<string, string> {
  const settings: Record<string, string> = {};
  const blocks: string[] = [];
  for (const rawLine of text.split('\n')) {
    const line = rawLine.replace(/#.*$/, '').trim();
    if (line === '') continue;
    const open = /^([a-z_]+)\s*\{$/.exec(line);
    if (open) {
      blocks.push(open[1]!);
      continue;
    }
    if (line === '}') {
      blocks.pop();
      continue;
    }
    const setting = /^([a-z_]+)\s*:\s*(.+)$/.exec(line);
    if (!setting) throw new Error(`unexpected line in a NATS configuration: ${line}`);
    const value = setting[2]!.trim();
    settings[[...blocks, setting[1]!].join('.')] = value.startsWith('"') ? (JSON.parse(value) as string) : value;
  }
  return settings;
}

/** The value following `flag` in a command given as a list, or undefined. */
function flagValue(command: string[], flag: string): string | undefined {
  const index = command.indexOf(flag);
  return index < 0 ? undefined : command[index + 1];
}

/** The port of a `host:port` listen address. */
function portOf(listen: string | undefined): number {
  return Number(String(listen).split(':').pop());
}

/**
 * The stages of a Dockerfile with their base image (a `${ARG}` resolved to the default of its `ARG` line)
 * and their exec-form CMD (inherited from the base stage).
 */
function parseDockerfile(text: string): DockerfileStage[] {
  const stages: DockerfileStage[] = [];
  const argDefaults = new Map<string, string>();
  for (const rawLine of text.split('\n')) {
    const line = rawLine.trim();
    const arg = /^ARG\s+([A-Z0-9_]+)=(\S+)$/i.exec(line);
    if (arg && stages.length === 0) argDefaults.set(arg[1]!, arg[2]!);
    const from = /^FROM\s+(\S+)(?:\s+AS\s+(\S+))?$/i.exec(line.replace(/\$\{([A-Z0-9_]+)\}/g, (match, name: string) => argDefaults.get(name) ?? match));
    if (from) {
      const inherited = stages.find((stage) => stage.name === from[1]);
      stages.push({ name: from[2] ?? `stage-${stages.length}`, base: from[1]!, command: inherited?.command ?? null, env: { ...inherited?.env } });
      continue;
    }
    const env = /^ENV\s+([A-Z0-9_]+)=(\S+)$/i.exec(line);
    if (env && stages.length > 0) stages[stages.length - 1]!.env[env[1]!] = env[2]!;
    const command = /^CMD\s+(\[.*\])$/i.exec(line);
    if (command && stages.length > 0) stages[stages.length - 1]!.command = JSON.parse(command[1]!) as string[];
  }
  return stages;
}

function environmentOf(service: ComposeService): Record<string, string> {
  const environment = service.environment ?? {};
  if (Array.isArray(environment)) {
    return Object.fromEntries(environment.map((entry) => [entry.split('=')[0]!, entry.slice(entry.indexOf('=') + 1)]));
  }
  return Object.fromEntries(Object.entries(environment).map(([name, value]) => [name, String(value ?? '')]));
}

/** The container-side ports a service publishes (`ports`) or exposes to the other services (`expose`). */
function containerPortsOf(service: ComposeService): number[] {
  const published = (service.ports ?? []).map((entry) => {
    if (typeof entry === 'object') return entry.target;
    const text = String(entry).split('/')[0]!;
    return Number(text.split(':').pop());
  });
  const exposed = (service.expose ?? []).map((entry) => Number(String(entry).split('/')[0]));
  return [...new Set([...published, ...exposed])].sort((left, right) => left - right);
}

function dependenciesOf(service: ComposeService): string[] {
  const dependsOn = service.depends_on ?? [];
  return Array.isArray(dependsOn) ? dependsOn : Object.keys(dependsOn);
}

function dockerfileOf(service: ComposeService): { path: string; stages: DockerfileStage[] } {
  const context = resolve(REPO_ROOT, 'docker', service.build?.context ?? '.');
  const path = resolve(context, service.build?.dockerfile ?? 'Dockerfile');
  return { path, stages: existsSync(path) ? parseDockerfile(readFileSync(path, 'utf8')) : [] };
}

const ENV_NAMES = new Set<string>(Object.values(ENV));

/** docker/nats-cluster.conf, the configuration the NATS services share. */
const natsConfig = parseNatsConfig(readFileSync(NATS_CONFIG_PATH, 'utf8').replace(/^include .*$/m, ''));
/** The nats-access.conf compose:up generates for it (with made-up users), which the servers include. */
const SAMPLE_ACCESS_CONFIG = composeNatsAccessConfig(
  (['data-node', 'client'] as const).map((identity) => ({ credentials: { user: `mink-${identity}`, password: `pw${identity.length}` }, permissions: natsPermissionsOf(identity, 'MINK_META') })),
  { user: 'mink-route', password: 'routepw' },
);
/** The secrets folder compose reads with no variable set, relative to docker/. */
const SECRETS_DIR = './secrets';

/** What a secret mounted at /run/secrets/<name> holds, as readServiceConfig reads it (made up: the real ones are generated). */
function readMountedSecret(path: string): string {
  if (!path.startsWith('/run/secrets/')) throw new Error(`not a compose secret: ${path}`);
  return `made-up-secret-of-${path.slice('/run/secrets/'.length)}`;
}

/** A container as a data node sees it: its short id as hostname, loopback and one address on the compose network. */
const SYNTHETIC_CONTAINER: HostFacts = {
  hostname: '3f2a9c81d0b7',
  interfaces: {
    lo: [{ address: '127.0.0.1', family: 'IPv4', internal: true }],
    eth0: [{ address: '172.18.0.7', family: 'IPv4', internal: false }],
  },
};

describe('parseNatsConfig', () => {
  it('reads top-level settings and settings of blocks, unquoting strings and dropping comments', () => {
    // Proves the helper the NATS checks below rely on, on a synthetic configuration.
    expect(parseNatsConfig('# a comment\nlisten: "0.0.0.0:4222"\nmax_payload: 1024 # bytes\njetstream {\n  store_dir: "/data"\n}\ncluster {\n  name: "c"\n}\n')).toEqual({
      listen: '0.0.0.0:4222',
      max_payload: '1024',
      'jetstream.store_dir': '/data',
      'cluster.name': 'c',
    });
    expect(() => parseNatsConfig('routes = [a]')).toThrow('unexpected line');
  });
});

describe('parseDockerfile', () => {
  it('reads stages, bases and inherited exec-form commands', () => {
    // Proves the helper the checks below rely on, on a synthetic Dockerfile.
    const stages = parseDockerfile('FROM node:20 AS base\nENV A=1\nCMD ["node", "a.js"]\nFROM base AS child\nENV B=2\nFROM base AS other\nCMD ["node", "b.js"]\n');
    expect(stages).toEqual([
      { name: 'base', base: 'node:20', command: ['node', 'a.js'], env: { A: '1' } },
      { name: 'child', base: 'base', command: ['node', 'a.js'], env: { A: '1', B: '2' } },
      { name: 'other', base: 'base', command: ['node', 'b.js'], env: { A: '1' } },
    ]);
  });
});

describe('docker/docker-compose.yml', () => {
  it('declares the cluster of the issue: three NATS servers, MinIO, two coordinators, three data nodes, two tiering workers, a gateway', () => {
    // Proves the set of services, which Dockerfile target each mink service builds and how many replicas it starts.
    expect(Object.fromEntries(minkServices.map(([name, service]) => [name, { target: service.build?.target, replicas: replicasOf(service) }]))).toEqual({
      coordinator: { target: 'coordinator', replicas: 2 },
      'data-node': { target: 'data-node', replicas: 3 },
      gateway: { target: 'gateway', replicas: 1 },
      'tiering-worker': { target: 'tiering-worker', replicas: 2 },
    });
    expect(natsServices.map(([name, service]) => [name, service.image])).toEqual([
      ['nats-1', 'nats:2.10'],
      ['nats-2', 'nats:2.10'],
      ['nats-3', 'nats:2.10'],
    ]);
    expect(compose.services.minio?.image).toMatch(/^minio\/minio/);
  });

  it('creates the bucket the services use', () => {
    // Proves the createbucket job makes exactly the bucket named by MINK_S3_BUCKET.
    const buckets = new Set(minkServices.map(([, service]) => environmentOf(service)[ENV.s3Bucket]));
    expect([...buckets]).toEqual(['mink']);
    expect([compose.services.createbucket?.entrypoint].flat().join(' ')).toContain('mc mb --ignore-existing local/mink');
  });

  it('runs every mink service with the Node.js flags `mink up` passes (DEFAULTS.serviceNodeFlags, and DEFAULTS.roleNodeFlags on its command), in both images', () => {
    // Proves the containers' V8 settings (the young generation's bound) are the ones the bench measured under `mink up`.
    const flags = DEFAULTS.serviceNodeFlags.join(' ');
    const { stages } = dockerfileOf(minkServices[0]![1]);
    for (const [, service] of minkServices) expect(stages.find((stage) => stage.name === service.build?.target)?.env.NODE_OPTIONS).toBe(flags);
    // A role's own flags sit between `node` and its main module; the local compose file runs the same commands (below).
    for (const [name, service] of minkServices) {
      const target = service.build?.target;
      const command = stages.find((stage) => stage.name === target)?.command ?? [];
      expect({ name, flags: command.slice(1, -1) }).toEqual({ name, flags: [...roleFlagsOf(target)] });
    }
    const local = parseDockerfile(readFileSync(resolve(__dirname, '../../docker/local/mink.Dockerfile'), 'utf8'));
    expect(local.map((stage) => stage.env.NODE_OPTIONS)).toEqual([flags]);
  });

  it('builds every stage from node:20-bookworm-slim', () => {
    // Proves the Dockerfile's external bases are the Node 20 image the toolchain is checked on.
    const { stages } = dockerfileOf(minkServices[0]![1]);
    const stageNames = new Set(stages.map((stage) => stage.name));
    const externalBases = stages.map((stage) => stage.base).filter((base) => !stageNames.has(base));
    expect(new Set(externalBases)).toEqual(new Set(['node:20-bookworm-slim']));
  });

  describe('the NATS cluster', () => {
    it('shares one configuration with JetStream and the payload limit of `mink up`, including the generated access config', () => {
      // Proves the servers run JetStream, listen where MINK_NATS_URL points, take scan pages as large as the
      // local cluster's servers do, and read their users, TLS and routes from the file compose:up generates.
      expect(natsConfig).toEqual(expect.objectContaining({ listen: '0.0.0.0:4222', 'jetstream.store_dir': '/data' }));
      expect(Number(natsConfig.max_payload)).toBe(LIMITS.natsMaxPayloadBytes);
      expect(readFileSync(NATS_CONFIG_PATH, 'utf8')).toMatch(/^include \.\/nats-access\.conf$/m);
    });

    it('forms one cluster named mink whose routes reach all three servers with the routes\' credentials, TLS on the client port', () => {
      // Proves the generated part: every server solicits a route to each of the three (its own is ignored by
      // nats-server) at the cluster port, with the user the cluster block asks for; TLS files where compose mounts them.
      expect(COMPOSE_NATS_SERVERS).toEqual(natsServices.map(([name]) => name));
      expect(SAMPLE_ACCESS_CONFIG).toContain(`listen: "0.0.0.0:${COMPOSE_NATS_ROUTE_PORT}"`);
      expect(SAMPLE_ACCESS_CONFIG).toContain('name: "mink"');
      const routes = JSON.parse(/routes: (\[.*\])/.exec(SAMPLE_ACCESS_CONFIG)![1]!) as string[];
      expect(routes).toEqual(natsServices.map(([name]) => `nats-route://mink-route:routepw@${name}:${COMPOSE_NATS_ROUTE_PORT}`));
      expect(SAMPLE_ACCESS_CONFIG).toContain(`cert_file: "${COMPOSE_NATS_TLS_MOUNTS.certFile}"`);
      expect(SAMPLE_ACCESS_CONFIG).toContain(`key_file: "${COMPOSE_NATS_TLS_MOUNTS.keyFile}"`);
    });

    describe.each(natsServices)('%s', (name, service) => {
      const command = [service.command ?? []].flat();

      it('reads the shared configuration and, beside it, the generated access config and TLS files, mounted read-only', () => {
        const configPath = flagValue(command, '--config')!;
        expect(configPath).toBeDefined();
        const folder = configPath.slice(0, configPath.lastIndexOf('/'));
        expect(service.volumes).toEqual(
          expect.arrayContaining([
            `./nats-cluster.conf:${configPath}:ro`,
            `${SECRETS_DIR}/${COMPOSE_SECRET_FILES.natsAccess}:${folder}/nats-access.conf:ro`,
            `${SECRETS_DIR}/${COMPOSE_SECRET_FILES.natsCert}:${COMPOSE_NATS_TLS_MOUNTS.certFile}:ro`,
            `${SECRETS_DIR}/${COMPOSE_SECRET_FILES.natsKey}:${COMPOSE_NATS_TLS_MOUNTS.keyFile}:ro`,
          ]),
        );
      });

      it('is named after its service, and has no route on its command line (they carry credentials: in the access config)', () => {
        // Proves JetStream peers have distinct names and no password shows in the container's arguments.
        expect(flagValue(command, '--name')).toBe(name);
        expect(flagValue(command, '--routes')).toBeUndefined();
      });

      it('keeps its JetStream store on a named volume of its own', () => {
        // Proves a server's streams survive its container, and no two servers share a store.
        const store = (service.volumes ?? []).find((volume) => volume.split(':')[1] === natsConfig['jetstream.store_dir']);
        expect(store).toBe(`${name}-data:/data`);
        expect(Object.keys(compose.volumes ?? {})).toContain(`${name}-data`);
      });

      it('publishes no port on the host', () => {
        expect(service.ports).toBeUndefined();
      });
    });
  });

  describe.each(minkServices)('%s', (name, service) => {
    const environment = environmentOf(service);

    it('builds an existing Dockerfile target whose command runs an existing app of the same name', () => {
      // Proves image and command agree with the repository: apps/<target>/ exists and is an application.
      const { path, stages } = dockerfileOf(service);
      expect(existsSync(path)).toBe(true);
      const stage = stages.find((candidate) => candidate.name === service.build?.target);
      expect(stage).toBeDefined();
      const command = service.command === undefined ? stage!.command : [service.command].flat();
      expect(command).toEqual(['node', ...roleFlagsOf(service.build?.target), `apps/${service.build?.target}/dist/main.js`]);
      const project = JSON.parse(readFileSync(join(REPO_ROOT, 'apps', service.build!.target!, 'project.json'), 'utf8')) as {
        projectType: string;
      };
      expect(project.projectType).toBe('application');
    });

    it('sets only MINK_* variables that the services read, including the shared ones', () => {
      // Proves no misspelt variable hides in the file and every service reaches the same S3.
      const unknown = Object.keys(environment).filter((variable) => variable.startsWith('MINK_') && !ENV_NAMES.has(variable));
      expect(unknown).toEqual([]);
      expect(environment).toEqual(
        expect.objectContaining({
          [ENV.s3Endpoint]: 'http://minio:9000',
          [ENV.s3Bucket]: 'mink',
          [ENV.nodeId]: expect.any(String),
          [ENV.httpPort]: expect.stringMatching(/^\d+$/),
        }),
      );
    });

    it('takes its S3 key and its own NATS identity from the secrets folder, trusts the NATS CA and asks for the metrics token', () => {
      // Proves no credential is in the file: the S3 key and the role's NATS user come from generated env files
      // (nats-<role>.env: each role only the subjects it needs), the CA and the metrics token from mounted secrets.
      expect(environment[ENV.s3AccessKeyId]).toBeUndefined();
      expect(environment[ENV.s3SecretAccessKey]).toBeUndefined();
      expect(service.env_file).toEqual([`${SECRETS_DIR}/${COMPOSE_SECRET_FILES.s3Env}`, `${SECRETS_DIR}/nats-${name}.env`]);
      expect(environment[ENV.natsTlsCaFile]).toBe('/run/secrets/nats_ca');
      expect(environment[ENV.metricsTokenFile]).toBe('/run/secrets/metrics_token');
      expect(service.secrets).toEqual(expect.arrayContaining(['nats_ca', 'metrics_token']));
      // The data nodes (Kafka SASL, internal scans) and the gateway (API, calls to those scans) hold the tokens and the cluster secret; no other role.
      const holdsTokens = name === 'data-node' || name === 'gateway';
      expect({ tokens: environment[ENV.authTokensFile], clusterSecret: environment[ENV.clusterSecretFile] }).toEqual(
        holdsTokens ? { tokens: '/run/secrets/mink_tokens', clusterSecret: '/run/secrets/cluster_secret' } : { tokens: undefined, clusterSecret: undefined },
      );
      // Only the data nodes hold the Kafka CA's key: they issue their listeners' certificates with it.
      const kafkaCa = name === 'data-node' ? ['kafka_ca', 'kafka_ca_key'] : [];
      expect([...(service.secrets ?? [])].sort()).toEqual([...(holdsTokens ? ['cluster_secret', 'metrics_token', 'mink_tokens', 'nats_ca'] : ['metrics_token', 'nats_ca']), ...kafkaCa].sort());
    });

    it('reaches all three NATS servers and creates its streams and KV buckets at 3 replicas', () => {
      // Proves every process survives the loss of any one NATS server: it knows every server of the cluster,
      // and what it creates in JetStream (R3) keeps a quorum with one server down.
      const clientPort = portOf(natsConfig.listen);
      expect(environment[ENV.natsUrl]!.split(',')).toEqual(natsServices.map(([server]) => `nats://${server}:${clientPort}`));
      expect(environment[ENV.metaReplicas]).toBe(String(natsServices.length));
      expect(readServiceConfig(environment, {}, () => SYNTHETIC_CONTAINER, readMountedSecret)).toMatchObject({ natsServers: environment[ENV.natsUrl]!.split(','), metaReplicas: 3 });
    });

    it('listens on the compose network, not on the container loopback where no other container reaches it', () => {
      // Proves the services' secure-by-default loopback binding (MINK_HTTP_BIND_HOST, MINK_KAFKA_BIND_HOST follow
      // a loopback advertised host) is widened here, or the gateway's published port and the other ports would be dead.
      expect({ http: environment[ENV.httpBindHost], kafka: environment[ENV.kafkaBindHost] }).toEqual({ http: '0.0.0.0', kafka: '0.0.0.0' });
      if (environment[ENV.grpcPort] !== undefined) expect(environment[ENV.grpcBindHost]).toBe('0.0.0.0');
    });

    it('exposes exactly the ports it configures', () => {
      // Proves MINK_HTTP_PORT (and MINK_KAFKA_PORT on data nodes, MINK_GRPC_PORT on the gateway) are the ports the container offers.
      const configured = [environment[ENV.httpPort], environment[ENV.kafkaPort], environment[ENV.grpcPort]]
        .filter((port): port is string => port !== undefined)
        .map(Number)
        .sort((left, right) => left - right);
      expect(containerPortsOf(service)).toEqual(configured);
    });

    it('starts after every NATS server and MinIO', () => {
      // Proves the dependency order compose uses to start the cluster.
      expect(dependenciesOf(service)).toEqual(expect.arrayContaining([...natsServices.map(([server]) => server), 'minio', 'createbucket']));
    });
  });

  describe('scaling', () => {
    const scalable = minkServices.filter(([, service]) => environmentOf(service)[ENV.nodeId] === 'auto');

    it('derives the node id of every replicated service, and of the data nodes their advertised host, per container', () => {
      // Proves `--scale` cannot give two containers one id: every service with more than one replica (and the
      // data nodes, whatever their count) takes its id from the container, and a data node advertises its own address.
      expect(scalable.map(([name]) => name).sort()).toEqual(['coordinator', 'data-node', 'tiering-worker']);
      expect(minkServices.filter(([, service]) => replicasOf(service) > 1).every(([name]) => scalable.some(([other]) => other === name))).toBe(true);
      expect(environmentOf(compose.services['data-node']!)[ENV.advertisedHost]).toBe('auto');
    });

    it.each(scalable)('leaves %s nothing that two replicas would fight over: no container name, hostname or host port', (_, service) => {
      // Proves `docker compose up --scale <service>=N` can start N containers: a fixed name or a published port
      // would make the second one fail, and a fixed hostname would give every replica the same derived id.
      expect({ containerName: service.container_name, hostname: service.hostname, ports: service.ports }).toEqual({
        containerName: undefined,
        hostname: undefined,
        ports: undefined,
      });
    });

    it('gives two data-node containers distinct valid ids and their own addresses for Kafka and internal scans', () => {
      // Proves the compose environment and @mink/config together: the same variables in two containers give two
      // identities, each a valid node id, each advertising the address other containers reach it at.
      const environment = environmentOf(compose.services['data-node']!);
      const configs = [SYNTHETIC_CONTAINER, { hostname: '7c0de2b19f44', interfaces: { eth0: [{ address: '172.18.0.8', family: 'IPv4', internal: false }] } }].map((host) =>
        readServiceConfig(environment, {}, () => host, readMountedSecret),
      );
      expect(configs.map((config) => [config.nodeId, config.advertisedHost])).toEqual([
        ['3f2a9c81d0b7', '172.18.0.7'],
        ['7c0de2b19f44', '172.18.0.8'],
      ]);
      for (const config of configs) expect(config.nodeId).toMatch(NODE_ID_PATTERN);
    });

    it('gives the services with a fixed id one replica and distinct ids', () => {
      const fixed = minkServices.filter(([, service]) => environmentOf(service)[ENV.nodeId] !== 'auto');
      expect(fixed.map(([, service]) => replicasOf(service))).toEqual(fixed.map(() => 1));
      const ids = fixed.map(([, service]) => environmentOf(service)[ENV.nodeId]);
      expect(new Set(ids).size).toBe(ids.length);
    });
  });

  it('publishes only the documented ports on the host', () => {
    // Proves nothing else reaches the host (NATS, MinIO, data nodes and coordinators stay on the compose network),
    // and that docs/operations.md "Docker" names every port that does.
    const published = Object.values(compose.services).flatMap((service) => (service.ports ?? []).map(String));
    expect(published.sort()).toEqual([...DOCUMENTED_HOST_PORTS].sort());
    const docker = operationsSection('Docker');
    for (const port of DOCUMENTED_HOST_PORTS) expect(docker).toContain(port.split(':').slice(-1)[0]);
  });

  it('publishes the gateway API on port 8080 and its gRPC API on 50051, on loopback unless MINK_PUBLISH_HOST says otherwise', () => {
    // Proves the documented default ports of the HTTP and gRPC APIs reach the host, and only its loopback by default.
    expect(compose.services.gateway?.ports).toEqual(['127.0.0.1:8080:8080', '127.0.0.1:50051:50051']);
    expect(COMPOSE_TEXT).toContain('"${MINK_PUBLISH_HOST:-127.0.0.1}:${MINK_PUBLISH_HTTP_PORT:-8080}:8080"');
    expect(environmentOf(compose.services.gateway!)[ENV.httpPort]).toBe('8080');
    expect(environmentOf(compose.services.gateway!)[ENV.grpcPort]).toBe('50051');
  });

  it("gives every data node TLS on its Kafka listener: a certificate it issues itself with the stack's Kafka CA, for the name clients bootstrap from", () => {
    // Proves the replicas (whose addresses are known only when they start) serve SASL over TLS, each with a
    // certificate for its own address (the advertised host) and the service name `data-node`.
    const dataNode = compose.services['data-node']!;
    const config = readServiceConfig(environmentOf(dataNode), {}, () => SYNTHETIC_CONTAINER, readMountedSecret);
    expect(config.kafkaTls).toBeNull();
    expect(config.kafkaTlsIssuer).toEqual({ caFile: '/run/secrets/kafka_ca', caKeyFile: '/run/secrets/kafka_ca_key', extraNames: ['data-node'] });
    expect(compose.secrets?.kafka_ca?.file).toBe(`${SECRETS_DIR}/${COMPOSE_SECRET_FILES.kafkaCa}`);
    expect(compose.secrets?.kafka_ca_key?.file).toBe(`${SECRETS_DIR}/${COMPOSE_SECRET_FILES.kafkaCaKey}`);
    expect(environmentOf(dataNode)[ENV.advertisedHost]).toBe('auto');
  });

  it('commits no working credential: every secret is a file of the git-ignored secrets folder, kept out of every image', () => {
    // Proves the compose files hold no password or key (MinIO's well-known default included), every mounted
    // secret and env file is in the secrets folder compose:up generates, and neither build context carries it.
    for (const path of [COMPOSE_PATH, LOCAL_COMPOSE_PATH, NATS_CONFIG_PATH]) {
      expect({ path, defaults: readFileSync(path, 'utf8').match(/minioadmin|\bS3RVER\b|^\s*password:/gm) }).toEqual({ path, defaults: null });
    }
    const generated = new Set<string>(Object.values(COMPOSE_SECRET_FILES));
    for (const [name, secret] of Object.entries(compose.secrets ?? {})) {
      expect({ name, file: secret.file?.startsWith(`${SECRETS_DIR}/`), generated: generated.has(secret.file!.slice(SECRETS_DIR.length + 1)) }).toEqual({ name, file: true, generated: true });
    }
    const envFiles = Object.values(compose.services).flatMap((service) => service.env_file ?? []);
    expect(envFiles.length).toBeGreaterThan(0);
    for (const file of envFiles) expect(file.startsWith(`${SECRETS_DIR}/`)).toBe(true);
    expect(compose.services.minio?.env_file).toEqual([`${SECRETS_DIR}/${COMPOSE_SECRET_FILES.minioEnv}`]);
    expect(readFileSync(join(REPO_ROOT, '.gitignore'), 'utf8').split('\n')).toEqual(expect.arrayContaining(['docker/secrets/', 'docker/tokens.json']));
    expect(readFileSync(join(REPO_ROOT, 'docker', 'Dockerfile.dockerignore'), 'utf8').split('\n')).toEqual(expect.arrayContaining(['docker/secrets', 'docker/tokens.json']));
    expect(WORKSPACE_EXCLUDES).toEqual(expect.arrayContaining(['./docker/secrets', './docker/tokens.json']));
  });

  it('asks for bearer tokens at the gateway, from the generated tokens file, whose example cannot be used as it is', () => {
    // Proves authentication is on in compose: the gateway reads its tokens from a mounted secret whose file is
    // generated (no shared secret ships), and the example of more tokens cannot be used as it is.
    const gateway = compose.services.gateway!;
    expect(environmentOf(gateway)[ENV.authTokensFile]).toBe('/run/secrets/mink_tokens');
    expect(compose.secrets?.mink_tokens?.file).toBe(`${SECRETS_DIR}/${COMPOSE_SECRET_FILES.tokens}`);
    const example = readFileSync(join(REPO_ROOT, 'docker', 'tokens.example.json'), 'utf8');
    expect(() => parseAccessPolicy(example, 'tokens.example.json')).toThrow('without spaces');
    let secrets = 0;
    const filledIn = example.replaceAll(/"token": "[^"]*"/g, () => `"token": "secret-number-${++secrets}-of-the-operator"`);
    expect(parseAccessPolicy(filledIn, 'tokens.json').tokens).toHaveLength(3);
  });

  it('runs Prometheus on the host loopback, finding every replica of every mink service by DNS at the port it listens on', () => {
    // Proves each mink service is one job that asks Docker's DNS for the A records of the service name (every
    // replica's address) at its MINK_HTTP_PORT, so a scaled service is scraped whole, and a service added to
    // compose without a job (or a port changed on one side only) fails here.
    const prometheus = compose.services.prometheus!;
    expect(prometheus.image).toMatch(/^prom\/prometheus:/);
    expect(prometheus.ports).toEqual(['127.0.0.1:9090:9090']);
    expect(dependenciesOf(prometheus).sort()).toEqual(minkServices.map(([name]) => name).sort());
    const config = parse(readFileSync(join(REPO_ROOT, 'docker', 'prometheus.yml'), 'utf8')) as {
      scrape_configs: { job_name: string; metrics_path: string; authorization?: unknown; static_configs?: unknown; dns_sd_configs?: { names: string[]; type: string; port: number }[] }[];
    };
    // Every job scrapes with the metrics token, from the secret Prometheus is given.
    expect(prometheus.secrets).toEqual(['prometheus_metrics_token']);
    const tokenFile = '/run/secrets/prometheus_metrics_token';
    const jobs = config.scrape_configs.map((job) => ({ job: job.job_name, path: job.metrics_path, authorization: job.authorization, static: job.static_configs, discovery: job.dns_sd_configs }));
    expect(jobs.sort((left, right) => left.job.localeCompare(right.job))).toEqual(
      minkServices
        .map(([name, service]) => ({ job: name, path: '/metrics', authorization: { credentials_file: tokenFile }, static: undefined, discovery: [{ names: [name], type: 'A', port: Number(environmentOf(service)[ENV.httpPort]), refresh_interval: expect.any(String) }] }))
        .sort((left, right) => left.job.localeCompare(right.job)),
    );
  });

  it('documents scaling, `auto`, the NATS cluster and Prometheus discovery in docs/operations.md "Docker"', () => {
    // Proves the operator finds how to use what this file sets up.
    const docker = operationsSection('Docker');
    for (const phrase of ['--scale data-node=', 'MINK_NODE_ID=auto', 'MINK_ADVERTISED_HOST=auto', 'MINK_META_REPLICAS=3', 'nats-cluster.conf', 'dns_sd_configs']) {
      expect(docker).toContain(phrase);
    }
  });

  it('ships a Grafana dashboard whose panels query metrics the services export', () => {
    // Proves every metric a panel asks for is one that some mink package registers (by name in its source).
    const dashboard = JSON.parse(readFileSync(join(REPO_ROOT, 'docker', 'grafana-dashboard.json'), 'utf8')) as { panels: { title: string; targets: { expr: string }[] }[] };
    expect(dashboard.panels.length).toBeGreaterThan(5);
    const registered = new Set<string>();
    for (const file of sourcesOf(join(REPO_ROOT, 'packages')).concat(sourcesOf(join(REPO_ROOT, 'apps')))) {
      for (const match of readFileSync(file, 'utf8').matchAll(/name: '(mink_[a-z_]+)'/g)) registered.add(match[1]!);
    }
    const asked = dashboard.panels.flatMap((panel) => panel.targets.flatMap((target) => [...target.expr.matchAll(/\b(mink_[a-z_]+?)(?:_bucket|_count|_sum)?\b(?=[{[(\s]|$)/g)].map((match) => match[1]!)));
    expect(asked.length).toBeGreaterThan(0);
    expect(asked.filter((name) => !registered.has(name))).toEqual([]);
  });
});

describe('compose v1 and v2 alike', () => {
  it('uses no key compose v1 (1.29) does not know: no top-level `name`, only services, volumes, secrets, networks and x- extensions', () => {
    // Proves `docker-compose` (v1, Debian's) reads the file as `docker compose` (v2) does; v1 refuses `name`.
    for (const path of [COMPOSE_PATH, LOCAL_COMPOSE_PATH]) {
      const topLevel = Object.keys(parse(withVariableDefaults(readFileSync(path, 'utf8'))) as object);
      expect({ path, unknown: topLevel.filter((key) => !['services', 'volumes', 'secrets', 'networks'].includes(key) && !key.startsWith('x-')) }).toEqual({ path, unknown: [] });
    }
  });

  it('takes every base image from a variable whose default is the official image', () => {
    // Proves users with a registry change nothing, while compose:up can run images built here.
    const images = [...COMPOSE_TEXT.matchAll(/^\s*image:\s*(.+)$/gm)].map((match) => match[1]!.trim());
    expect(images.sort()).toEqual(['${MINK_MC_IMAGE:-minio/mc}', '${MINK_MINIO_IMAGE:-minio/minio}', '${MINK_NATS_IMAGE:-nats:2.10}', '${MINK_PROMETHEUS_IMAGE:-prom/prometheus:v2.55.1}']);
    expect(COMPOSE_TEXT).toContain('NODE_IMAGE: ${MINK_NODE_IMAGE:-node:20-bookworm-slim}');
    // Every variable has a default: nothing must be set to run the file.
    expect([...COMPOSE_TEXT.matchAll(/\$\{([^}]*)\}/g)].map((match) => match[1]!).filter((variable) => !variable.includes(':-'))).toEqual([]);
  });
});

describe('docker/docker-compose.local.yml', () => {
  const local = parse(readFileSync(LOCAL_COMPOSE_PATH, 'utf8'), { merge: true }) as { services: Record<string, ComposeService> };

  it('overrides services of docker-compose.yml only, each with an image compose:up builds', () => {
    // Proves the override adds no service and names only images LOCAL_IMAGES builds (tagged :latest).
    const built = new Set(LOCAL_IMAGES.map((image) => `${image.repository}:latest`));
    for (const [name, service] of Object.entries(local.services)) {
      expect({ name, inBase: name in compose.services, image: built.has(service.image ?? '') }).toEqual({ name, inBase: true, image: true });
    }
    expect(Object.keys(local.services).sort()).toEqual(Object.keys(compose.services).sort());
  });

  it('runs each mink service as its Dockerfile target does, against s3rver with the generated key', () => {
    // Proves the one local mink image starts the same app per service as docker/Dockerfile's targets.
    for (const [name, service] of minkServices) {
      const { stages } = dockerfileOf(service);
      const target = stages.find((stage) => stage.name === service.build?.target);
      expect({ name, command: local.services[name]?.command }).toEqual({ name, command: target?.command });
      expect(local.services[name]?.environment).toBeUndefined();
    }
    // s3rver listens where MINK_S3_ENDPOINT points and creates the bucket the services use.
    const s3Command = [local.services.minio?.command].flat().join(' ');
    const endpoint = new URL(environmentOf(minkServices[0]![1])[ENV.s3Endpoint]!);
    expect(endpoint.hostname).toBe('minio');
    expect(s3Command).toContain(`--port ${endpoint.port}`);
    expect(s3Command).toContain(`--bucket ${environmentOf(minkServices[0]![1])[ENV.s3Bucket]}`);
    // s3rver-main takes MinIO's variables (the service keeps the base file's minio.env) as its one access key.
    expect(local.services.minio?.env_file).toBeUndefined();
    expect(readFileSync(join(REPO_ROOT, 'packages', 'devcluster', 'bin', 's3rver-main.js'), 'utf8')).toContain('process.env.MINIO_ROOT_PASSWORD');
  });
});

/** The text of a `## <title>` section of docs/operations.md, up to the next `## ` heading. */
function operationsSection(title: string): string {
  const readme = readFileSync(join(REPO_ROOT, 'docs', 'operations.md'), 'utf8');
  const start = readme.indexOf(`\n## ${title}\n`);
  if (start < 0) throw new Error(`docs/operations.md has no section "## ${title}"`);
  const end = readme.indexOf('\n## ', start + 1);
  return readme.slice(start, end < 0 ? undefined : end);
}

/** The TypeScript sources under `root`, specs and builds left out. */
function sourcesOf(root: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(root, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name === 'dist') continue;
    const path = join(root, entry.name);
    if (entry.isDirectory()) found.push(...sourcesOf(path));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts')) found.push(path);
  }
  return found;
}
