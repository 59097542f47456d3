#!/usr/bin/env node
import { run } from './program';

// The AWS SDK (the lake commands read S3 through it) warns on standard error, in nine lines, that its
// releases of 2027 will need Node.js 22. That is for the project to act on, not for someone running a
// command; it would also turn each one-line error of the CLI into ten lines. Set explicitly, it stays.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

// The exit code is set explicitly because a command may leave idle sockets (fetch keeps connections
// alive) that would otherwise hold the process open for a few seconds after it is done.
run(process.argv.slice(2)).then(
  (exitCode) => process.exit(exitCode),
  (error: unknown) => {
    process.stderr.write(`error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
