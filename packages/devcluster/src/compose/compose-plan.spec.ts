import {
  LOCAL_IMAGES,
  composeDownArguments,
  composeDownOptions,
  composeFileArguments,
  composeUpArguments,
  isWorkspaceContent,
  localImageTag,
  stackReadiness,
  type StackContainer,
} from './compose-plan';

describe('composeFileArguments', () => {
  it.each([
    ['local', ['-p', 'mink', '-f', 'docker/docker-compose.yml', '-f', 'docker/docker-compose.local.yml']],
    ['registry', ['-p', 'mink', '-f', 'docker/docker-compose.yml']],
  ] as const)('%s images: %p', (source, expected) => {
    // The project is named on the command line because compose v1 reads no top-level `name`.
    expect(composeFileArguments(source)).toEqual(expected);
  });

  it('names another project when asked', () => {
    expect(composeFileArguments('registry', 'mink-test-7').slice(0, 2)).toEqual(['-p', 'mink-test-7']);
  });
});

describe('composeUpArguments', () => {
  it.each<[string[], 'local' | 'registry', string[]]>([
    [[], 'local', ['up', '-d', '--no-build']],
    [[], 'registry', ['up', '-d']],
    [['--scale', 'data-node=5'], 'local', ['up', '-d', '--no-build', '--scale', 'data-node=5']],
    [['--scale=coordinator=3', '-d'], 'local', ['up', '-d', '--no-build', '--scale=coordinator=3']],
    [['--build'], 'registry', ['up', '-d', '--build']],
  ])('%p with %s images: %p', (user, source, expected) => {
    expect(composeUpArguments(user, source)).toEqual({ arguments: expected });
  });

  it.each<[string[], 'local' | 'registry', string]>([
    [['--build'], 'local', '--build is not taken'],
    [['--abort-on-container-exit'], 'local', 'detached'],
    [['--exit-code-from=gateway'], 'registry', 'detached'],
    [['--scale'], 'local', '--scale takes <service>=<count>'],
    [['--scale', 'five'], 'local', '--scale takes <service>=<count>, not five'],
    [['--scale=data-node'], 'local', '--scale takes <service>=<count>, not data-node'],
  ])('refuses %p with %s images, saying why', (user, source, message) => {
    const outcome = composeUpArguments(user, source);
    expect('error' in outcome ? outcome.error : '').toContain(message);
  });
});

describe('composeDownOptions and composeDownArguments', () => {
  it('removes the volumes unless --keep-data, and takes nothing else', () => {
    expect(composeDownOptions([])).toEqual({ keepData: false });
    expect(composeDownOptions(['--keep-data'])).toEqual({ keepData: true });
    expect(composeDownOptions(['--volumes'])).toEqual({ error: 'compose:down takes only --keep-data, not --volumes' });
    expect(composeDownArguments(false)).toEqual(['down', '--remove-orphans', '--volumes']);
    expect(composeDownArguments(true)).toEqual(['down', '--remove-orphans']);
  });
});

describe('LOCAL_IMAGES and localImageTag', () => {
  it('builds each image after the one it is built on', () => {
    const built: string[] = [];
    for (const image of LOCAL_IMAGES) {
      if (image.from !== null) expect({ image: image.name, after: built.includes(image.from) }).toEqual({ image: image.name, after: true });
      built.push(image.name);
    }
  });

  it('tags by content: the same inputs give the same tag, any change another', () => {
    const tag = localImageTag('mink-local/nats', ['FROM x', 'mink-local/debian:c-1', '']);
    expect(tag).toMatch(/^mink-local\/nats:c-[0-9a-f]{16}$/);
    expect(localImageTag('mink-local/nats', ['FROM x', 'mink-local/debian:c-1', ''])).toBe(tag);
    expect(localImageTag('mink-local/nats', ['FROM y', 'mink-local/debian:c-1', ''])).not.toBe(tag);
    expect(localImageTag('mink-local/nats', ['FROM x', 'mink-local/debian:c-2', ''])).not.toBe(tag);
    // Inputs are length-prefixed: moving a character from one input to the next changes the tag.
    expect(localImageTag('mink-local/nats', ['ab', 'c'])).not.toBe(localImageTag('mink-local/nats', ['a', 'bc']));
  });
});

describe('isWorkspaceContent', () => {
  it.each<[string, boolean]>([
    ['pnpm-lock.yaml', true],
    ['package.json', true],
    ['packages/kafka/dist/index.js', true],
    ['packages/devcluster/bin/s3rver-main.js', true],
    ['apps/gateway/package.json', true],
    ['apps/gateway/dist/.tsbuildinfo', false],
    ['packages/kafka/src/index.ts', false],
    ['test/e2e/kafka.e2e.ts', false],
    ['docker/tokens.json', false],
  ])('%s: %p', (path, content) => {
    // What runs in the image and what decides node_modules, nothing else, so a test edit rebuilds nothing.
    expect(isWorkspaceContent(path)).toBe(content);
  });
});

describe('stackReadiness', () => {
  const container = (overrides: Partial<StackContainer>): StackContainer => ({ name: 'mink_gateway_1', service: 'gateway', status: 'running', exitCode: 0, health: 'healthy', ...overrides });

  it('is ready when every server runs (healthy where checked) and every one-shot service exited with 0', () => {
    expect(
      stackReadiness([container({}), container({ name: 'mink_nats-1_1', service: 'nats-1', health: null }), container({ name: 'mink_createbucket_1', service: 'createbucket', status: 'exited', health: null })]),
    ).toEqual({ ready: true, waiting: [], failed: [] });
  });

  it('waits for starting, unhealthy, restarting and still running one-shot containers, naming each', () => {
    expect(
      stackReadiness([
        container({ health: 'starting' }),
        container({ name: 'mink_data-node_2', service: 'data-node', health: 'unhealthy' }),
        container({ name: 'mink_nats-2_1', service: 'nats-2', status: 'restarting', health: null }),
        container({ name: 'mink_createbucket_1', service: 'createbucket', status: 'running', health: null }),
      ]),
    ).toEqual({ ready: false, waiting: ['mink_gateway_1 (starting)', 'mink_data-node_2 (unhealthy)', 'mink_nats-2_1 (restarting)', 'mink_createbucket_1 (running)'], failed: [] });
  });

  it('fails on a one-shot service that exited with an error, and is never ready without containers', () => {
    expect(stackReadiness([container({ name: 'mink_createbucket_1', service: 'createbucket', status: 'exited', exitCode: 1, health: null })]).failed).toEqual(['mink_createbucket_1 (exited with 1)']);
    expect(stackReadiness([]).ready).toBe(false);
  });
});

