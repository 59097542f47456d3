#!/bin/sh
# Makes a fresh checkout ready to build and test: Node.js 20.15+, pnpm 10, the workspace's packages and
# nats-server. Safe to run again and again: each step runs only when its check fails, so a machine that
# has everything prints nothing. Used by `pnpm run up`, `npm test` and CI.
set -eu

cd "$(dirname "$0")/.."

# Node.js 20.15 or newer: the services, the tests and pnpm 10 need it (20.15 brought zlib.crc32, which seals
# every NATS request and reply; packages/transport/src/seal.ts).
node_version=$(node -p 'const [major, minor] = process.versions.node.split(".").map(Number); major * 1000 + minor' 2>/dev/null || echo 0)
if [ "$node_version" -lt 20015 ]; then
  echo "mink needs Node.js 20.15 or newer (this is $(node --version 2>/dev/null || echo 'no node'))" >&2
  exit 1
fi

# pnpm 10 from npm: corepack cannot fetch it here, and pnpm 11 needs Node.js 22.
if ! command -v pnpm >/dev/null 2>&1; then
  if ! npm install -g pnpm@10 >/dev/null 2>&1 || ! command -v pnpm >/dev/null 2>&1; then
    echo "install pnpm 10: npm install -g pnpm@10" >&2
    exit 1
  fi
fi

# The workspace's packages, when they are missing or older than the lockfile. pnpm rewrites
# node_modules/.modules.yaml on every install, so its age tells when the last install ran.
if [ ! -f pnpm-lock.yaml ]; then
  if [ ! -d node_modules ]; then
    pnpm install
  fi
elif [ ! -f node_modules/.modules.yaml ] || [ pnpm-lock.yaml -nt node_modules/.modules.yaml ]; then
  pnpm install --frozen-lockfile
fi

# nats-server, which `mink up` and the integration tests start. Debian installs it in /usr/sbin, which is
# not on every user's PATH; the launcher looks there too.
if ! command -v nats-server >/dev/null 2>&1 && [ ! -x /usr/sbin/nats-server ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq nats-server >/dev/null
  else
    echo "nats-server not found: install it (Debian: apt-get install nats-server)" >&2
    exit 1
  fi
fi

# librdkafka as the second, independent Kafka client of the tests (kcat; the Python binding for scripts and
# examples), from Debian like nats-server.
# Debian's binding belongs to Debian's python (/usr/bin/python3), whatever python3 comes first on PATH.
if ! command -v kcat >/dev/null 2>&1 || ! { /usr/bin/python3 -c 'import confluent_kafka' || python3 -c 'import confluent_kafka'; } >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq kcat python3-confluent-kafka >/dev/null
  else
    echo "kcat or python3-confluent-kafka not found: install them (Debian: apt-get install kcat python3-confluent-kafka)" >&2
    exit 1
  fi
fi

# Chromium, which the web console's end-to-end test drives headless through puppeteer-core (no browser is
# downloaded: puppeteer-core uses this one), from Debian like nats-server.
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq chromium >/dev/null
  else
    echo "chromium not found: install it (Debian: apt-get install chromium)" >&2
    exit 1
  fi
fi
