/**
 * The lake's heavy dependencies, loaded on first use rather than when a process imports @mink/lake: every data
 * node and gateway imports it for lake reads, most never read a Parquet file or an Avro manifest, and loading
 * parquet-wasm costs a process about 17 MiB of resident memory (its WebAssembly instance) and 120 ms, avsc 4 MiB.
 * The types come from `import type`, so the compiler still checks every use.
 */
import type * as ParquetWasm from 'parquet-wasm';
import type * as Avsc from 'avsc';

let parquet: typeof ParquetWasm | undefined;
let avro: typeof Avsc | undefined;

/** parquet-wasm, loaded the first time it is needed. */
export function parquetWasm(): typeof ParquetWasm {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (parquet ??= require('parquet-wasm') as typeof ParquetWasm);
}

/** avsc, loaded the first time it is needed. */
export function avsc(): typeof Avsc {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (avro ??= require('avsc') as typeof Avsc);
}
