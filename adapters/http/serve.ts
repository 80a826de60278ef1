import { ConfigError, loadConfig, type ProxyConfig } from './config.js';
import { log, startServer } from './server.js';

/** Loaded by main.ts on a supported Node (`npm start`): read the environment, migrate, listen, and stop cleanly on SIGTERM or SIGINT. */
async function main(): Promise<void> {
  const config = loadConfig();
  const running = await startServer(config);
  log('slipway listening', { url: running.url, host: config.host, port: config.port, database: running.database.kind, dataDir: config.dataDir, proxy: describeProxy(config.proxy) });
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) {
      // A second Ctrl-C means "now"; a repeated SIGTERM (supervisors resend) changes nothing.
      if (signal === 'SIGINT') process.exit(130);
      return;
    }
    stopping = true;
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
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

function describeProxy(proxy: ProxyConfig): string {
  if (proxy.kind === 'none') return 'none';
  const serving = proxy.autoHttps ? `https :${proxy.httpsPort} and http :${proxy.httpPort}` : `plain http :${proxy.httpPort}`;
  return proxy.kind === 'external' ? `caddy at ${proxy.adminUrl}, ${serving}` : `caddy container ${proxy.image}, ${serving}`;
}

main().catch((error: unknown) => {
  const message = error instanceof ConfigError ? error.message : error instanceof Error ? (error.stack ?? error.message) : String(error);
  log('failed to start', { error: message });
  process.exit(1);
});
