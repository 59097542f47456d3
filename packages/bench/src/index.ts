export {
  BENCH_INTERRUPTED_EXIT_CODE,
  benchOptionsFromFlags,
  buildBenchProgram,
  runBenchCommand,
  type BenchFlags,
  type RunBenchmark,
} from './bench-command';
export { BENCH_DEFAULTS, BENCH_LIMITS } from './bench-limits';
export { renderReport } from './report';
export { BENCH_FIGURES, DEFAULT_BENCH_FIGURES, type BenchFigures, type BenchResult } from './results';
export { runBench, type BenchRunOptions, type StartBenchCluster } from './run-bench';
