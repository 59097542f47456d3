#!/usr/bin/env node
'use strict';
/*
 * Runs s3rver as its own process for `mink up` and the tests. It is plain CommonJS so it runs without a
 * build. Start it with `node --openssl-legacy-provider` (s3rver's signing of continuation tokens fails
 * with 500 without it on Node 17+).
 *
 * Arguments (each may instead come from the environment variable in brackets):
 *   --port N          [MINK_S3_PORT]       port to listen on (default 4568)
 *   --address HOST    [MINK_S3_ADDRESS]    address to listen on (default 127.0.0.1; 0.0.0.0 in a container)
 *   --directory DIR   [MINK_S3_DIRECTORY]  folder that keeps the objects; reusing it keeps them
 *   --bucket NAME     [MINK_S3_BUCKET]     bucket created at start if it does not exist
 *   --latency-median-ms N, --latency-p99-ms N  answer every request that much later (log-normal, see
 *                     s3-latency.js; p99 defaults to the median: a fixed delay), as a cloud object store's
 *                     first byte comes: the request is handled at once, its answer held back
 *
 * With MINIO_ROOT_USER and MINIO_ROOT_PASSWORD set (MinIO's own variables: the compose stack's local stand-in for
 * MinIO is given the same env file), that access key replaces s3rver's built-in S3RVER one. s3rver checks only
 * that a signed request names a known access key (it does not verify V4 signatures, and it serves unsigned
 * requests): it is a stand-in for tests and local stacks, reachable only by them.
 *
 * Prints one line `s3rver ready http://ADDRESS:PORT` on stdout once it accepts requests, and exits
 * cleanly on SIGTERM or SIGINT.
 */
const S3rver = require('s3rver');
const { DUMMY_ACCOUNT } = require('s3rver/lib/models/account');
const { sampleDelayMs } = require('./s3-latency');

function argument(name, environmentName, fallback) {
  const index = process.argv.indexOf(`--${name}`);
  if (index !== -1 && index + 1 < process.argv.length) return process.argv[index + 1];
  const fromEnvironment = process.env[environmentName];
  if (fromEnvironment !== undefined && fromEnvironment !== '') return fromEnvironment;
  if (fallback !== undefined) return fallback;
  process.stderr.write(`s3rver-main: --${name} (or ${environmentName}) is required\n`);
  process.exit(2);
}

async function main() {
  const port = Number(argument('port', 'MINK_S3_PORT', '4568'));
  const directory = argument('directory', 'MINK_S3_DIRECTORY');
  const bucket = argument('bucket', 'MINK_S3_BUCKET');
  const host = argument('address', 'MINK_S3_ADDRESS', '127.0.0.1');
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    process.stderr.write(`s3rver-main: port '${port}' is not a TCP port\n`);
    process.exit(2);
  }
  const accessKeyId = process.env.MINIO_ROOT_USER;
  const secretAccessKey = process.env.MINIO_ROOT_PASSWORD;
  if (accessKeyId && secretAccessKey) {
    DUMMY_ACCOUNT.revokeAccessKey('S3RVER');
    DUMMY_ACCOUNT.createKeyPair(accessKeyId, secretAccessKey);
  }
  const server = new S3rver({
    address: host,
    port,
    directory,
    silent: true,
    resetOnClose: false,
    configureBuckets: [{ name: bucket }],
    // mink addresses buckets by path. Left on, s3rver takes a host name that is neither an address nor
    // localhost (`minio` on a compose network) for a bucket name.
    vhostBuckets: false,
  });
  const medianMs = process.argv.includes('--latency-median-ms') ? Number(argument('latency-median-ms')) : 0;
  if (medianMs > 0) {
    const latency = { medianMs, p99Ms: process.argv.includes('--latency-p99-ms') ? Number(argument('latency-p99-ms')) : medianMs };
    sampleDelayMs(latency); // refuses p99 < median before the server starts
    // First in the chain: Koa sends the answer once every middleware has resolved, so awaiting after next()
    // holds back the first byte of the answer of a request that is already handled.
    server.middleware.unshift(async (ctx, next) => {
      await next();
      await new Promise((resolve) => setTimeout(resolve, sampleDelayMs(latency)));
    });
  }
  const address = await server.run();
  process.stdout.write(`s3rver ready http://${host}:${address.port}\n`);

  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    server.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
    // Idle keep-alive connections of clients would otherwise hold close() open until they time out.
    if (server.httpServer && typeof server.httpServer.closeAllConnections === 'function') {
      server.httpServer.closeAllConnections();
    }
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((error) => {
  process.stderr.write(`s3rver-main: ${error && error.stack ? error.stack : error}\n`);
  process.exit(1);
});
