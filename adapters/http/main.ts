import { ConfigError, loadConfig } from './config.js';
import { log, startServer } from './server.js';

/** `npm start`: read the environment, migrate, listen, and stop cleanly on SIGTERM or SIGINT. */
async function main(): Promise<void> {
  const config = loadConfig();
  const running = await startServer(config);
  log('slipway listening', { url: running.url, host: config.host, port: config.port, database: running.database.kind, dataDir: config.dataDir });
  const stop = (signal: string) => {
    log('shutting down', { signal });
    running.close().then(
      () => {
        log('stopped');
        process.exit(0);
      },
      (error: unknown) => {
        log('shutdown failed', { error: String(error) });
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}

main().catch((error: unknown) => {
  const message = error instanceof ConfigError ? error.message : error instanceof Error ? (error.stack ?? error.message) : String(error);
  log('failed to start', { error: message });
  process.exit(1);
});
