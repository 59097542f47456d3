// ESLint here checks module boundaries (STYLE "Nx module boundaries"): which project may import which, by
// the tags in each project.json, and which SDKs the pure core may never load. The rule reads the Nx project
// graph, so run it through Nx (`pnpm run lint`, `pnpm nx run-many -t lint`): a bare `eslint` without a
// cached graph skips it with a warning.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';

/** Frameworks, SDKs and native engines the pure core (and the util packages it builds on) may not import, even for types. */
const SDKS = ['@nestjs/*', 'nats', '@aws-sdk/*', 'fastify', 'lmdb'];

/** Who may depend on whom: apps → adapters → core → util; tools and the repository's tests may use anything. */
const DEPENDENCY_RULES = [
  { sourceTag: 'type:core', onlyDependOnLibsWithTags: ['type:core', 'type:util'], bannedExternalImports: SDKS },
  { sourceTag: 'type:util', onlyDependOnLibsWithTags: ['type:util'], bannedExternalImports: SDKS },
  { sourceTag: 'type:adapter', onlyDependOnLibsWithTags: ['type:core', 'type:util', 'type:adapter'] },
  { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['type:core', 'type:util', 'type:adapter'] },
  { sourceTag: 'type:tool', onlyDependOnLibsWithTags: ['*'] },
];

/**
 * Specs may also use the test kit (@mink/testing, an adapter), so a core package's specs may import adapters
 * (still no SDK). The test kit depends on packages whose specs use it (metalog, s3stream, devcluster), so
 * specs close cycles that production code does not: spec files are exempt from the circular check, and
 * those packages' project.json cut the spec-only edges (`"implicitDependencies": ["!testing"]`) so that the
 * build graph stays acyclic (a cycle there fails `nx run-many -t build` and names the projects).
 */
const SPEC_DEPENDENCY_RULES = DEPENDENCY_RULES.map((rule) =>
  rule.sourceTag === 'type:core' ? { ...rule, onlyDependOnLibsWithTags: ['type:core', 'type:util', 'type:adapter'] } : rule,
);

/** Every project (name, folder, tags), read from its project.json: the tags are the one source of truth. */
const PROJECTS = ['apps', 'packages']
  .flatMap((group) => readdirSync(join(import.meta.dirname, group)).map((name) => `${group}/${name}`))
  .concat('test')
  .filter((root) => existsSync(join(import.meta.dirname, root, 'project.json')))
  .map((root) => ({ root, ...JSON.parse(readFileSync(join(import.meta.dirname, root, 'project.json'), 'utf8')) }));

/** Source files of the core packages. */
const CORE_SOURCES = PROJECTS.filter((project) => project.tags?.includes('type:core')).map((project) => `${project.root}/src/**/*.ts`);

/**
 * Every pair of two different projects, so that a spec may close any cycle ('*' would also pair each project
 * with itself, which turns off the rule's handling of imports inside one project).
 */
const ANY_CYCLE = PROJECTS.flatMap((a) => PROJECTS.filter((b) => b.name !== a.name).map((b) => [a.name, b.name]));

const SPECS = ['**/*.spec.ts', '**/*.fixture.ts', '**/*.contract.ts'];

export default [
  { ignores: ['**/dist/', '**/node_modules/', 'coverage/', '.nx/', '.mink/', 'tmp/'] },
  // The apps' `eslint-disable-next-line no-console` lines wait for a console rule this set does not turn on.
  { linterOptions: { reportUnusedDisableDirectives: 'off' } },
  {
    files: ['**/*.ts'],
    languageOptions: { parser: tseslint.parser },
    plugins: { '@nx': nx, '@typescript-eslint': tseslint.plugin },
    rules: {
      '@nx/enforce-module-boundaries': ['error', { depConstraints: DEPENDENCY_RULES }],
    },
  },
  {
    files: SPECS,
    rules: {
      '@nx/enforce-module-boundaries': ['error', { depConstraints: SPEC_DEPENDENCY_RULES, ignoredCircularDependencies: ANY_CYCLE }],
    },
  },
  {
    // The boundary rule sees import, export … from, import() and require(), but not `import x = require()`:
    // core code imports with ES syntax only, so every import it makes is checked.
    files: CORE_SOURCES,
    rules: { '@typescript-eslint/no-require-imports': 'error' },
  },
];
