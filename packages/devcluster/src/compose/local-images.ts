import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, createReadStream, createWriteStream, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { DEBIAN_ROOT, LOCAL_IMAGES, WORKSPACE_EXCLUDES, isWorkspaceContent, localImageTag, type LocalImageName, type LocalImageSpec } from './compose-plan';
import { runTool, type DockerTools } from './docker-tools';

/** The content tag of every local image, by name. */
export type LocalImageTags = Record<LocalImageName, string>;

async function digestOfFile(path: string): Promise<string> {
  const digest = createHash('sha256');
  for await (const chunk of createReadStream(path)) digest.update(chunk as Buffer);
  return digest.digest('hex');
}

/** Every file under `dir` (symbolic links not followed), as paths relative to `root`. */
function filesUnder(root: string, dir: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...filesUnder(root, path));
    else if (entry.isFile()) files.push(relative(root, path));
  }
  return files;
}

/** The digest of the workspace's content that the mink image is made of (isWorkspaceContent), by path and bytes. */
export async function workspaceDigest(root: string): Promise<string> {
  const candidates = ['package.json', 'pnpm-lock.yaml', 'pnpm-workspace.yaml'];
  for (const group of ['packages', 'apps']) {
    for (const name of readdirSync(join(root, group))) {
      const dir = join(root, group, name);
      if (!statSync(dir).isDirectory()) continue;
      candidates.push(relative(root, join(dir, 'package.json')));
      for (const sub of ['dist', 'bin']) {
        try {
          candidates.push(...filesUnder(root, join(dir, sub)));
        } catch {
          // No such folder: nothing of it runs.
        }
      }
    }
  }
  const digest = createHash('sha256');
  for (const path of candidates.filter(isWorkspaceContent).sort()) {
    let bytes: Buffer;
    try {
      bytes = readFileSync(join(root, path));
    } catch {
      continue;
    }
    digest.update(`${path}\0${bytes.length}\0`).update(bytes);
  }
  return digest.digest('hex');
}

async function imageExists(tools: DockerTools, tag: string): Promise<boolean> {
  return runTool(tools.docker, ['image', 'inspect', '--format', '{{.Id}}', tag]).then(
    () => true,
    () => false,
  );
}

/**
 * Runs `command` with its output in `logFile`, optionally fed from `stdinFrom` (a file path) or `stdinText`,
 * and rejects with the end of that log when it fails.
 */
function runLogged(command: string, args: string[], logFile: string, input: { file?: string; text?: string; pipeFrom?: { command: string; args: string[] } } = {}): Promise<void> {
  return new Promise((resolve, reject) => {
    const log = createWriteStream(logFile, { flags: 'a' });
    log.write(`$ ${[command, ...args].join(' ')}\n`);
    const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, DOCKER_BUILDKIT: '0' } });
    child.stdout.pipe(log, { end: false });
    child.stderr.pipe(log, { end: false });
    let producerFailed: string | null = null;
    if (input.pipeFrom !== undefined) {
      const producer = spawn(input.pipeFrom.command, input.pipeFrom.args, { stdio: ['ignore', 'pipe', 'pipe'] });
      producer.stderr.pipe(log, { end: false });
      producer.stdout.pipe(child.stdin);
      producer.on('exit', (code) => {
        if (code !== 0) producerFailed = `${input.pipeFrom!.command} exited with ${code}`;
      });
    } else if (input.file !== undefined) {
      createReadStream(input.file).pipe(child.stdin);
    } else {
      child.stdin.end(input.text ?? '');
    }
    child.on('error', reject);
    child.on('exit', (code) => {
      log.end(() => {
        if (code === 0 && producerFailed === null) return resolve();
        const tail = readFileSync(logFile, 'utf8').trim().split('\n').slice(-8).join('\n');
        reject(new Error(`${command} ${args.slice(0, 2).join(' ')} failed (${producerFailed ?? `exit ${code}`}); the end of ${logFile}:\n${tail}`));
      });
    });
  });
}

/**
 * Builds the images of docker/docker-compose.local.yml that are missing, each tagged by its content
 * (localImageTag) and as `:latest`: the Debian root by debootstrap and `docker import`, Node.js from this
 * machine's binary, NATS and Prometheus from Debian's packages, mink from the installed, built workspace,
 * and s3rver from the mink image. An image whose content tag exists is not built again.
 */
export async function buildLocalImages(tools: DockerTools, root: string, stateDir: string, log: (line: string) => void): Promise<LocalImageTags> {
  const tags = {} as LocalImageTags;
  for (const spec of LOCAL_IMAGES) {
    const dockerfileText = spec.dockerfile === null ? '' : readFileSync(join(root, spec.dockerfile), 'utf8');
    const fromTag = spec.from === null ? null : tags[spec.from];
    const inputs = [dockerfileText, fromTag ?? '', await contextDigest(spec, root)];
    const tag = localImageTag(spec.repository, inputs);
    tags[spec.name] = tag;
    if (!(await imageExists(tools, tag))) {
      const started = Date.now();
      const logFile = join(stateDir, `build-${spec.name}.log`);
      rmSync(logFile, { force: true });
      log(`building ${tag} (${describe(spec)}); log ${logFile}`);
      await buildOne(tools, spec, tag, fromTag, root, logFile);
      log(`built ${tag} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
    }
    await runTool(tools.docker, ['tag', tag, `${spec.repository}:latest`]);
  }
  return tags;
}

function describe(spec: LocalImageSpec): string {
  switch (spec.name) {
    case 'debian':
      return `debootstrap --variant=${DEBIAN_ROOT.variant} ${DEBIAN_ROOT.suite}, about a minute`;
    case 'mink':
      return 'the installed, built workspace';
    default:
      return spec.dockerfile!;
  }
}

/** The digest of what a build sends besides its Dockerfile and base, for its content tag. */
async function contextDigest(spec: LocalImageSpec, root: string): Promise<string> {
  switch (spec.context) {
    case 'none':
      return spec.name === 'debian' ? `${DEBIAN_ROOT.suite} ${DEBIAN_ROOT.variant} ${DEBIAN_ROOT.mirror}` : '';
    case 'node-binary':
      return digestOfFile(process.execPath);
    case 'workspace':
      return workspaceDigest(root);
  }
}

async function buildOne(tools: DockerTools, spec: LocalImageSpec, tag: string, fromTag: string | null, root: string, logFile: string): Promise<void> {
  const buildArguments = spec.fromArgument !== null && fromTag !== null ? ['--build-arg', `${spec.fromArgument}=${fromTag}`] : [];
  switch (spec.context) {
    case 'none': {
      if (spec.dockerfile !== null) {
        // No context: the Dockerfile is the whole build input (`docker build -` reads it from stdin).
        await runLogged(tools.docker, ['build', ...buildArguments, '-t', tag, '-'], logFile, { file: join(root, spec.dockerfile) });
        return;
      }
      const rootfs = mkdtempSync(join(tmpdir(), 'mink-debian-'));
      try {
        await runLogged(tools.debootstrap, [`--variant=${DEBIAN_ROOT.variant}`, DEBIAN_ROOT.suite, rootfs, DEBIAN_ROOT.mirror], logFile);
        await runLogged(tools.docker, ['import', '-', tag], logFile, { pipeFrom: { command: 'tar', args: ['-C', rootfs, '-c', '.'] } });
      } finally {
        rmSync(rootfs, { recursive: true, force: true });
      }
      return;
    }
    case 'node-binary': {
      const context = mkdtempSync(join(tmpdir(), 'mink-node-image-'));
      try {
        copyFileSync(process.execPath, join(context, 'node'));
        copyFileSync(join(root, spec.dockerfile!), join(context, 'Dockerfile'));
        await runLogged(tools.docker, ['build', ...buildArguments, '-t', tag, context], logFile);
      } finally {
        rmSync(context, { recursive: true, force: true });
      }
      return;
    }
    case 'workspace': {
      const excludes = WORKSPACE_EXCLUDES.map((pattern) => `--exclude=${pattern}`);
      await runLogged(tools.docker, ['build', ...buildArguments, '-f', spec.dockerfile!, '-t', tag, '-'], logFile, {
        pipeFrom: { command: 'tar', args: ['-C', root, ...excludes, '-c', '.'] },
      });
      return;
    }
  }
}

/**
 * An image of one Dockerfile without context (`docker build -`, the Dockerfile from stdin) on `baseTag` as
 * the build argument `baseArgument`, tagged by content like the local images and built only when missing:
 * for images the tests need beside the stack (kcat).
 */
export async function ensureContextlessImage(
  tools: DockerTools,
  image: { repository: string; dockerfilePath: string; baseArgument: string; baseTag: string },
  stateDir: string,
  log: (line: string) => void,
): Promise<string> {
  const tag = localImageTag(image.repository, [readFileSync(image.dockerfilePath, 'utf8'), image.baseTag, '']);
  if (await imageExists(tools, tag)) return tag;
  const logFile = join(stateDir, `build-${image.repository.replace(/\W+/g, '-')}.log`);
  rmSync(logFile, { force: true });
  log(`building ${tag} (${image.dockerfilePath}); log ${logFile}`);
  await runLogged(tools.docker, ['build', '--build-arg', `${image.baseArgument}=${image.baseTag}`, '-t', tag, '-'], logFile, { file: image.dockerfilePath });
  return tag;
}
