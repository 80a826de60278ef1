import { ConfigError, loadConfig, type ProxyConfig } from '../composition/config.js';
import { ensureContainerEngine, trafficGatePreflight } from '../composition/root.js';
import { log, startServer } from './server.js';

/** Loaded by main.ts on a supported Node (`npm start`): read the environment, migrate, listen, and stop cleanly on SIGTERM or SIGINT. */
async function main(): Promise<void> {
  const config = loadConfig();
  const setup = await ensureContainerEngine(config, log, (line) => process.stderr.write(`${line}\n`));
  if (!setup.ok) {
    // One plain line, not a JSON record: this is for the person at the terminal.
    process.stderr.write(`${setup.line}\n`);
    process.exit(1);
  }
  // Behind Caddy: what installs that are gone left in the packet filter goes, and a gate port that
  // another install or process holds is refused here rather than found crash-looping later.
  const refusal = await trafficGatePreflight(config, log);
  if (refusal) {
    process.stderr.write(`slipway: ${refusal}.\n`);
    process.exit(1);
  }
  const running = await startServer(config);
  log('slipway listening', {
    url: running.url,
    host: config.host,
    port: config.port,
    database: running.database.kind,
    dataDir: config.dataDir,
    proxy: describeProxy(config.proxy),
    instanceId: config.platform.instanceId,
  });
  if (running.initialApiKey) printInitialKey(running.initialApiKey, running.url);
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

/**
 * The first start's key, for the person at the terminal: plain lines on stdout, never a JSON record
 * (log shippers store those), never written again: later starts do not have it.
 */
function printInitialKey(token: string, url: string): void {
  process.stdout.write(
    [
      '',
      '================================================================================',
      ' First start: an API key with write access to all projects was created.',
      ' It is shown this once only. Keep it:',
      '',
      `     ${token}`,
      '',
      ` curl -H "Authorization: Bearer ${token}" ${url}/api/projects`,
      ' More keys: npm run cli -- keys create --name <name> --access read|write',
      '================================================================================',
      '',
      '',
    ].join('\n'),
  );
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
