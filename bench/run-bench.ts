/** Runs a bench's main: exit 0 when it ends, 1 with the stack when it throws, and SIGTERM after `watchdogMs`. */
export async function runBench(main: () => Promise<void>, watchdogMs: number): Promise<never> {
  const watchdog = setTimeout(() => {
    process.stderr.write(`bench failed: still running after ${watchdogMs / 1000} s\n`);
    process.kill(process.pid, 'SIGTERM');
  }, watchdogMs);
  watchdog.unref();
  try {
    await main();
    process.exit(0);
  } catch (error) {
    process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  }
}
