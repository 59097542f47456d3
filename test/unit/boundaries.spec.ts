import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import * as ts from 'typescript';

/**
 * Module boundaries (STYLE "Nx module boundaries", DESIGN §1 and STYLE 2–3): the pure rules never import
 * an SDK or a framework, never reach into the JetStream adapter by a relative path, and no core package
 * imports an app. Imports are read with TypeScript's own pre-processor, so `import type`, `export … from`,
 * `require()`, `import()` and `import x = require()` all count, and comments and strings do not.
 */

const REPO_ROOT = resolve(__dirname, '..', '..');

/** Folders holding the pure core: no I/O, so no SDK or framework either. */
const PURE_FOLDERS = ['packages/epochs/src', 'packages/ownership/src', 'packages/meta/src', 'packages/records/src', 'packages/pk/src'];

/** Frameworks and SDKs the pure folders may not import, even for types. */
const BANNED_PACKAGES = ['@nestjs/*', 'nats', '@aws-sdk/*', 'fastify'];

/** Relative targets the pure folders may not reach: the JetStream adapter of the metadata log. */
const FORBIDDEN_RELATIVE_TARGETS = ['packages/metalog'];

interface Violation {
  file: string;
  specifier: string;
  reason: string;
}

interface Project {
  /** Folder relative to the repository root, e.g. `packages/meta`. */
  root: string;
  packageName: string | null;
  tags: string[];
}

/** Every specifier a TypeScript source imports or re-exports, in any of the forms TypeScript knows. */
function importSpecifiers(source: string): string[] {
  return ts.preProcessFile(source, true, true).importedFiles.map((file) => file.fileName);
}

function isBannedPackage(specifier: string): boolean {
  return BANNED_PACKAGES.some((banned) =>
    banned.endsWith('/*') ? specifier.startsWith(banned.slice(0, -1)) : specifier === banned || specifier.startsWith(`${banned}/`),
  );
}

/** The repository-relative path a relative specifier points to (without an extension), or null for a package. */
function resolveRelative(file: string, specifier: string): string | null {
  if (!specifier.startsWith('.')) return null;
  return relative(REPO_ROOT, resolve(REPO_ROOT, dirname(file), specifier)).split(sep).join('/');
}

function isInside(path: string, folder: string): boolean {
  return path === folder || path.startsWith(`${folder}/`);
}

/** Violations of the pure-core rules in one file (`file` is relative to the repository root). */
function checkPureSource(file: string, source: string): Violation[] {
  const folder = PURE_FOLDERS.find((candidate) => isInside(file, candidate));
  if (folder === undefined) return [];
  const violations: Violation[] = [];
  for (const specifier of importSpecifiers(source)) {
    if (isBannedPackage(specifier)) {
      violations.push({ file, specifier, reason: 'pure code imports a framework or SDK' });
      continue;
    }
    const target = resolveRelative(file, specifier);
    if (target === null || isInside(target, folder)) continue;
    // A folder import ('..') loads the folder's index, so it is checked as that index.
    const isFolder = existsSync(join(REPO_ROOT, target)) && statSync(join(REPO_ROOT, target)).isDirectory();
    const importedModule = isFolder ? `${target}/index` : target.replace(/\.(ts|js)$/, '');
    const forbidden = FORBIDDEN_RELATIVE_TARGETS.find((candidate) => isInside(importedModule, candidate));
    if (forbidden !== undefined) violations.push({ file, specifier, reason: `pure code reaches ${forbidden} by a relative path` });
  }
  return violations;
}

/** Violations of "a core package never imports an app" in one file of a core package. */
function checkCoreSource(file: string, source: string, projects: Project[]): Violation[] {
  const apps = projects.filter((project) => project.tags.includes('type:app'));
  const violations: Violation[] = [];
  for (const specifier of importSpecifiers(source)) {
    const target = resolveRelative(file, specifier);
    const app =
      target === null
        ? apps.find((project) => project.packageName !== null && (specifier === project.packageName || specifier.startsWith(`${project.packageName}/`)))
        : apps.find((project) => isInside(target, project.root));
    if (app) violations.push({ file, specifier, reason: `core package imports the app ${app.root}` });
  }
  return violations;
}

/**
 * Violations of "a core package imports only core and util workspace packages" in one file: an adapter
 * package would bring its SDK in through the back door (e.g. ownership → metalog → nats).
 */
function checkCoreDependencies(file: string, source: string, projects: Project[]): Violation[] {
  const violations: Violation[] = [];
  for (const specifier of importSpecifiers(source)) {
    const project = projects.find((candidate) => candidate.packageName !== null && (specifier === candidate.packageName || specifier.startsWith(`${candidate.packageName}/`)));
    if (project && !project.tags.includes('type:core') && !project.tags.includes('type:util')) {
      violations.push({ file, specifier, reason: `core package imports ${project.root}, which is not core or util` });
    }
  }
  return violations;
}

function readProjects(): Project[] {
  const projects: Project[] = [];
  for (const group of ['apps', 'packages']) {
    for (const name of readdirSync(join(REPO_ROOT, group))) {
      const root = `${group}/${name}`;
      const projectFile = join(REPO_ROOT, root, 'project.json');
      if (!existsSync(projectFile)) continue;
      const project = JSON.parse(readFileSync(projectFile, 'utf8')) as { tags?: string[] };
      const packageFile = join(REPO_ROOT, root, 'package.json');
      const packageName = existsSync(packageFile) ? ((JSON.parse(readFileSync(packageFile, 'utf8')) as { name?: string }).name ?? null) : null;
      projects.push({ root, packageName, tags: project.tags ?? [] });
    }
  }
  return projects;
}

/** TypeScript sources under a folder (relative paths), skipping build output and installed packages. */
function sourceFiles(folder: string): string[] {
  const absolute = join(REPO_ROOT, folder);
  if (!existsSync(absolute)) return [];
  const files: string[] = [];
  for (const entry of readdirSync(absolute)) {
    if (entry === 'node_modules' || entry === 'dist') continue;
    const path = `${folder}/${entry}`;
    if (statSync(join(REPO_ROOT, path)).isDirectory()) files.push(...sourceFiles(path));
    else if (/\.(ts|tsx|js|mjs|cjs)$/.test(entry) && !entry.endsWith('.d.ts')) files.push(path);
  }
  return files;
}

function read(file: string): string {
  return readFileSync(join(REPO_ROOT, file), 'utf8');
}

const PROJECTS = readProjects();

describe('boundary checker', () => {
  it.each<[string, string, string, string[]]>([
    ['a type-only import of nats', 'packages/meta/src/state/view.ts', "import type { Msg } from 'nats';", ['nats']],
    ['a require of the AWS SDK', 'packages/epochs/src/epochs.ts', "const s3 = require('@aws-sdk/client-s3');", ['@aws-sdk/client-s3']],
    ['a re-export from Nest', 'packages/ownership/src/assign.ts', "export { Injectable } from '@nestjs/common';", ['@nestjs/common']],
    ['a default import of fastify', 'packages/ownership/src/assign.ts', "import Fastify from 'fastify';", ['fastify']],
    ['a dynamic import of nats', 'packages/epochs/src/epochs.ts', "async function f() { return import('nats'); }", ['nats']],
    ['an import-equals of nats', 'packages/epochs/src/epochs.ts', "import nats = require('nats');", ['nats']],
    ['a relative path into the JetStream adapter', 'packages/meta/src/state/view.ts', "import { MetaLog } from '../../../metalog/src/meta-log';", ['../../../metalog/src/meta-log']],
    ['the meta index from inside meta', 'packages/meta/src/state/view.ts', "import { apply } from '..';", []],
    ['an import inside the folder', 'packages/meta/src/state/view.ts', "import { apply } from './apply';", []],
    ['a workspace util package', 'packages/ownership/src/assign.ts', "import { LIMITS } from '@mink/config';", []],
    ['a package whose name only starts like a banned one', 'packages/epochs/src/epochs.ts', "import x from 'nats-like';\nimport y from 'fastify-plugin-free';", []],
    ['imports in comments and strings', 'packages/epochs/src/epochs.ts', "// import 'nats';\nconst text = \"import 'fastify'\";", []],
    ['a file outside the pure folders', 'packages/metalog/src/meta-log.ts', "import { connect } from 'nats';", []],
  ])('pure-core rule on %s', (_case, file, source, offending) => {
    // Proves the checker flags exactly the offending specifiers of a synthetic source.
    expect(checkPureSource(file, source).map((violation) => violation.specifier)).toEqual(offending);
  });

  it.each<[string, string, string, string[]]>([
    ['an app by package name', 'packages/ownership/src/assign.ts', "import { GatewayModule } from '@mink/gateway';", ['@mink/gateway']],
    ['an app by relative path', 'packages/meta/src/state/view.ts', "import '../../../../apps/coordinator/src/main';", ['../../../../apps/coordinator/src/main']],
    ['the CLI, which is tagged type:app', 'packages/epochs/src/epochs.ts', "import { run } from '@mink/cli';", ['@mink/cli']],
    ['another core package', 'packages/ownership/src/assign.ts', "import { apply } from '@mink/meta';", []],
  ])('core-imports-no-app rule on %s', (_case, file, source, offending) => {
    // Proves the app check knows apps by package name and by folder, using the project.json tags.
    expect(checkCoreSource(file, source, PROJECTS).map((violation) => violation.specifier)).toEqual(offending);
  });
});

describe('core dependency checker', () => {
  it.each<[string, string, string, string[]]>([
    ['an adapter package', 'packages/ownership/src/assign.ts', "import { MetaStore } from '@mink/metalog';", ['@mink/metalog']],
    ['a core package', 'packages/ownership/src/assign.ts', "import { apply } from '@mink/meta';", []],
    ['a util package', 'packages/ownership/src/assign.ts', "import { LIMITS } from '@mink/config';", []],
  ])('core-imports-core-or-util rule on %s', (_case, file, source, offending) => {
    // Proves the checker flags workspace imports of a core package that are neither core nor util.
    expect(checkCoreDependencies(file, source, PROJECTS).map((violation) => violation.specifier)).toEqual(offending);
  });
});

describe('module boundaries of the repository', () => {
  it('knows the core packages and the apps from their project.json tags', () => {
    // Proves the scan below has something to scan: the tags name at least the pure packages and four apps.
    const core = PROJECTS.filter((project) => project.tags.includes('type:core')).map((project) => project.root);
    expect(core).toEqual(expect.arrayContaining(['packages/epochs', 'packages/meta', 'packages/ownership']));
    const apps = PROJECTS.filter((project) => project.tags.includes('type:app')).map((project) => project.root);
    expect(apps).toEqual(expect.arrayContaining(['apps/coordinator', 'apps/data-node', 'apps/gateway', 'apps/tiering-worker']));
  });

  it('keeps frameworks, SDKs and the JetStream adapter out of the pure folders', () => {
    // Proves the rule on every source file of packages/epochs/src, packages/ownership/src and packages/meta/src/state.
    const files = PURE_FOLDERS.flatMap(sourceFiles);
    expect(files.length).toBeGreaterThan(0);
    expect(files.flatMap((file) => checkPureSource(file, read(file)))).toEqual([]);
  });

  it('keeps apps out of every core package', () => {
    // Proves no file of a type:core package imports a type:app project.
    const coreRoots = PROJECTS.filter((project) => project.tags.includes('type:core') && project.root.startsWith('packages/')).map(
      (project) => project.root,
    );
    const files = coreRoots.flatMap((root) => sourceFiles(`${root}/src`));
    expect(files.length).toBeGreaterThan(0);
    expect(files.flatMap((file) => checkCoreSource(file, read(file), PROJECTS))).toEqual([]);
  });

  it('lets core packages depend only on core and util packages', () => {
    // Proves no type:core package imports an adapter package (which would load its SDK at run time).
    const coreRoots = PROJECTS.filter((project) => project.tags.includes('type:core')).map((project) => project.root);
    const files = coreRoots.flatMap((root) => sourceFiles(`${root}/src`)).filter((file) => !file.endsWith('.spec.ts'));
    expect(files.length).toBeGreaterThan(0);
    expect(files.flatMap((file) => checkCoreDependencies(file, read(file), PROJECTS))).toEqual([]);
  });
});
