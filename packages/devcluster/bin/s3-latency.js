'use strict';
/*
 * The delay s3rver-main adds before every answer when asked to stand in for a cloud object store
 * (`--latency-median-ms`, `--latency-p99-ms`): a log-normal first-byte latency with that median and 99th
 * percentile (a fixed delay when they are equal), the long-tailed shape object stores show. Plain CommonJS,
 * beside s3rver-main, so both run without a build; packages/devcluster/src/s3-latency.spec.ts tests it.
 */

/** z of the 99th percentile of the standard normal distribution. */
const Z_P99 = 2.3263478740408408;

/**
 * The delay in ms for one standard-normal draw `normal`: median × (p99 / median)^(normal / z99), so that
 * normal = 0 gives the median and normal = z99 the 99th percentile.
 */
function lognormalDelayMs(latency, normal) {
  const { medianMs, p99Ms } = latency;
  if (!(medianMs > 0) || !(p99Ms >= medianMs)) throw new Error(`a latency needs 0 < median <= p99, got median ${medianMs} ms and p99 ${p99Ms} ms`);
  return medianMs * Math.pow(p99Ms / medianMs, normal / Z_P99);
}

/** One standard-normal draw from two uniform draws in (0, 1] and [0, 1) (Box–Muller). */
function standardNormal(uniform1, uniform2) {
  return Math.sqrt(-2 * Math.log(uniform1)) * Math.cos(2 * Math.PI * uniform2);
}

/** A delay drawn with Math.random. */
function sampleDelayMs(latency) {
  return lognormalDelayMs(latency, standardNormal(1 - Math.random(), Math.random()));
}

module.exports = { Z_P99, lognormalDelayMs, standardNormal, sampleDelayMs };
