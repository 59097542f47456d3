// The unit tier's global teardown. Jest runs that tier in its own process on a 2-core machine (one worker),
// and without --forceExit a handle some test left open would keep that process, and CI, waiting for its
// 90 minutes. Instead: once every test has run, an unref'd timer (it keeps nothing alive itself) gives the
// process `MINK_TEST_EXIT_WATCHDOG_S` seconds (60) to end by itself; if it is still there, it writes what
// keeps it alive (the referenced libuv handles of a Node.js diagnostic report, and the active resources)
// and exits with status 1, so the hang is a failure with its cause, not a silent wait or a silent exit.

/** The referenced, active libuv handles of a diagnostic report: what keeps the event loop running. */
function liveHandlesOf(report) {
  return (report.libuv ?? []).filter((handle) => handle.is_active && handle.is_referenced).map((handle) => {
    const { type, address: _address, is_active: _active, is_referenced: _referenced, ...rest } = handle;
    return { type, ...rest };
  });
}

function startExitWatchdog(seconds = Number(process.env.MINK_TEST_EXIT_WATCHDOG_S || 60), exit = (code) => process.exit(code)) {
  const timer = setTimeout(() => {
    const report = process.report.getReport();
    const lines = [
      `the test process is still running ${seconds} s after its last test finished; what keeps it alive:`,
      `  active resources: ${JSON.stringify(process.getActiveResourcesInfo())}`,
      ...liveHandlesOf(report).map((handle) => `  libuv handle: ${JSON.stringify(handle)}`),
    ];
    process.stderr.write(`${lines.join('\n')}\n`);
    exit(1);
  }, seconds * 1000);
  timer.unref();
  return timer;
}

module.exports = async () => {
  startExitWatchdog();
};
module.exports.startExitWatchdog = startExitWatchdog;
module.exports.liveHandlesOf = liveHandlesOf;
