# The mink services from the workspace as this machine installed and built it (`pnpm install`, `pnpm run
# build`): no install inside the build, so no registry is needed. The build context is the workspace without
# .git, tests, docs and secrets (packages/devcluster/src/compose/compose-plan.ts, WORKSPACE_EXCLUDES). Each
# compose service runs one app of it (docker-compose.local.yml).
ARG NODE_IMAGE
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
# DEFAULTS.serviceNodeFlags of packages/config/src/limits.ts (`mink up` passes the same): a young generation of 2 MiB semi-spaces.
ENV NODE_OPTIONS=--max-semi-space-size=2
WORKDIR /mink
COPY . /mink
USER node
