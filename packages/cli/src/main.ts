#!/usr/bin/env node
import { run } from './program';

// The exit code is set explicitly because a command may leave idle sockets (fetch keeps connections
// alive) that would otherwise hold the process open for a few seconds after it is done.
run(process.argv.slice(2)).then(
  (exitCode) => process.exit(exitCode),
  (error: unknown) => {
    process.stderr.write(`error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
