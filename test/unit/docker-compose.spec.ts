import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parse } from 'yaml';
import { ENV } from '@mink/config';
import { parseAccessPolicy } from '@mink/http-api';

/**
 * No Docker engine runs on the development machines (docs/architecture.md §13), so docker/docker-compose.yml is kept
 * correct by reading it: every mink service must build an existing Dockerfile target that runs an
 * existing app, set only environment variables the services read, expose the ports it configures, and
 * wait for NATS and MinIO.
 */

const REPO_ROOT = resolve(__dirname, '..', '..');
const COMPOSE_PATH = join(REPO_ROOT, 'docker', 'docker-compose.yml');

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
}

interface DockerfileStage {
  name: string;
  base: string;
  command: string[] | null;
}

const compose = parse(readFileSync(COMPOSE_PATH, 'utf8'), { merge: true }) as { services: Record<string, ComposeService>; secrets?: Record<string, { file?: string }> };

/** Services built from this repository's Dockerfile: the mink apps (as opposed to nats, minio, …). */
const minkServices = Object.entries(compose.services).filter(([, service]) => service.build !== undefined);

/** The stages of a Dockerfile with their base image and their exec-form CMD (inherited from the base stage). */
function parseDockerfile(text: string): DockerfileStage[] {
  const stages: DockerfileStage[] = [];
  for (const rawLine of text.split('\n')) {
    const line = rawLine.trim();
    const from = /^FROM\s+(\S+)(?:\s+AS\s+(\S+))?$/i.exec(line);
    if (from) {
      const inherited = stages.find((stage) => stage.name === from[1]);
      stages.push({ name: from[2] ?? `stage-${stages.length}`, base: from[1]!, command: inherited?.command ?? null });
      continue;
    }
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

describe('parseDockerfile', () => {
  it('reads stages, bases and inherited exec-form commands', () => {
    // Proves the helper the checks below rely on, on a synthetic Dockerfile.
    const stages = parseDockerfile('FROM node:20 AS base\nCMD ["node", "a.js"]\nFROM base AS child\nFROM base AS other\nCMD ["node", "b.js"]\n');
    expect(stages).toEqual([
      { name: 'base', base: 'node:20', command: ['node', 'a.js'] },
      { name: 'child', base: 'base', command: ['node', 'a.js'] },
      { name: 'other', base: 'base', command: ['node', 'b.js'] },
    ]);
  });
});

describe('docker/docker-compose.yml', () => {
  it('declares the cluster of docs/architecture.md §13: NATS, MinIO, two coordinators, three data nodes, a gateway and a tiering worker', () => {
    // Proves the set of services, and which Dockerfile target each mink service builds.
    expect(Object.fromEntries(minkServices.map(([name, service]) => [name, service.build?.target]))).toEqual({
      'coordinator-1': 'coordinator',
      'coordinator-2': 'coordinator',
      'data-node-1': 'data-node',
      'data-node-2': 'data-node',
      'data-node-3': 'data-node',
      gateway: 'gateway',
      'tiering-worker': 'tiering-worker',
    });
    expect(compose.services.nats?.image).toMatch(/^nats:2\.10/);
    expect([compose.services.nats?.command].flat()).toContain('-js');
    expect(compose.services.minio?.image).toMatch(/^minio\/minio/);
  });

  it('creates the bucket the services use', () => {
    // Proves the createbucket job makes exactly the bucket named by MINK_S3_BUCKET.
    const buckets = new Set(minkServices.map(([, service]) => environmentOf(service)[ENV.s3Bucket]));
    expect([...buckets]).toEqual(['mink']);
    expect([compose.services.createbucket?.entrypoint].flat().join(' ')).toContain('mc mb --ignore-existing local/mink');
  });

  it('builds every stage from node:20-bookworm-slim', () => {
    // Proves the Dockerfile's external bases are the Node 20 image the toolchain is checked on.
    const { stages } = dockerfileOf(minkServices[0]![1]);
    const stageNames = new Set(stages.map((stage) => stage.name));
    const externalBases = stages.map((stage) => stage.base).filter((base) => !stageNames.has(base));
    expect(new Set(externalBases)).toEqual(new Set(['node:20-bookworm-slim']));
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
      expect(command).toEqual(['node', `apps/${service.build?.target}/dist/main.js`]);
      const project = JSON.parse(readFileSync(join(REPO_ROOT, 'apps', service.build!.target!, 'project.json'), 'utf8')) as {
        projectType: string;
      };
      expect(project.projectType).toBe('application');
    });

    it('sets only MINK_* variables that the services read, including the shared ones', () => {
      // Proves no misspelt variable hides in the file and every service reaches the same NATS and S3.
      const unknown = Object.keys(environment).filter((variable) => variable.startsWith('MINK_') && !ENV_NAMES.has(variable));
      expect(unknown).toEqual([]);
      expect(environment).toEqual(
        expect.objectContaining({
          [ENV.natsUrl]: 'nats://nats:4222',
          [ENV.s3Endpoint]: 'http://minio:9000',
          [ENV.s3Bucket]: 'mink',
          [ENV.s3AccessKeyId]: expect.any(String),
          [ENV.s3SecretAccessKey]: expect.any(String),
          [ENV.nodeId]: expect.any(String),
          [ENV.httpPort]: expect.stringMatching(/^\d+$/),
        }),
      );
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

    it('starts after NATS and MinIO', () => {
      // Proves the dependency order compose uses to start the cluster.
      expect(dependenciesOf(service)).toEqual(expect.arrayContaining(['nats', 'minio']));
    });
  });

  it('gives data nodes distinct ids and ports, a Kafka port each, and their service name as advertised host', () => {
    // Proves Kafka metadata can point clients at each data node separately.
    const dataNodes = minkServices.filter(([, service]) => service.build?.target === 'data-node');
    const rows = dataNodes.map(([name, service]) => {
      const environment = environmentOf(service);
      return { name, id: environment[ENV.nodeId], http: environment[ENV.httpPort], kafka: environment[ENV.kafkaPort], host: environment[ENV.advertisedHost] };
    });
    expect(rows.map((row) => row.host)).toEqual(rows.map((row) => row.name));
    for (const field of ['id', 'http', 'kafka'] as const) {
      const values = rows.map((row) => row[field]);
      expect(values.every((value) => value !== undefined && value !== '')).toBe(true);
      expect(new Set(values).size).toBe(rows.length);
    }
  });

  it('publishes the gateway API on port 8080', () => {
    // Proves the documented default port of the HTTP API reaches the host.
    expect(compose.services.gateway?.ports).toContain('8080:8080');
    expect(environmentOf(compose.services.gateway!)[ENV.httpPort]).toBe('8080');
  });

  it('asks for bearer tokens at the gateway, from a secret file the operator writes from the example', () => {
    // Proves authentication is on in compose: the gateway reads its tokens from a mounted secret whose file is
    // not in the repository (no shared secret ships), and the example cannot be used as it is.
    const gateway = compose.services.gateway!;
    expect(environmentOf(gateway)[ENV.authTokensFile]).toBe('/run/secrets/mink_tokens');
    expect(gateway.secrets).toEqual(['mink_tokens']);
    expect(compose.secrets?.mink_tokens?.file).toBe('./tokens.json');
    expect(readFileSync(join(REPO_ROOT, '.gitignore'), 'utf8').split('\n')).toContain('docker/tokens.json');
    const example = readFileSync(join(REPO_ROOT, 'docker', 'tokens.example.json'), 'utf8');
    expect(() => parseAccessPolicy(example, 'tokens.example.json')).toThrow('without spaces');
    let secrets = 0;
    const filledIn = example.replaceAll(/"token": "[^"]*"/g, () => `"token": "secret-number-${++secrets}-of-the-operator"`);
    expect(parseAccessPolicy(filledIn, 'tokens.json').tokens).toHaveLength(3);
  });

  it('runs Prometheus on the host loopback, scraping /metrics of every mink service at the port it listens on', () => {
    // Proves the scrape targets are exactly the mink services and their MINK_HTTP_PORTs, so a service added
    // to compose without a target (or a port changed on one side only) fails here.
    const prometheus = compose.services.prometheus!;
    expect(prometheus.image).toMatch(/^prom\/prometheus:/);
    expect(prometheus.ports).toEqual(['127.0.0.1:9090:9090']);
    const config = parse(readFileSync(join(REPO_ROOT, 'docker', 'prometheus.yml'), 'utf8')) as { scrape_configs: { metrics_path: string; static_configs: { targets: string[] }[] }[] };
    expect(config.scrape_configs.map((job) => job.metrics_path)).toEqual(['/metrics']);
    const targets = config.scrape_configs.flatMap((job) => job.static_configs.flatMap((each) => each.targets)).sort();
    expect(targets).toEqual(minkServices.map(([name, service]) => `${name}:${environmentOf(service)[ENV.httpPort]}`).sort());
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
