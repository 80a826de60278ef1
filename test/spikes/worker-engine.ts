/**
 * The platform reaching a worker's engine over mutual TLS (docs/cluster-findings.md, item 4): dockerode
 * with the platform's client certificate and the platform's CA, against `dockerd --tlsverify` on the
 * worker's address. Does what terminals, database admin, backups, logs and metrics need, for a container
 * of a Swarm task on that worker: exec with a TTY and stdin (a terminal), exec without a TTY (a query:
 * stdout and stderr apart), one stats sample, the logs, and a file read through the archive API (a
 * backup's copy). Prints the time of each.
 *   bash scripts/ensure-node.sh npx tsx test/spikes/worker-engine.ts <address:port> <pki dir> <service name>
 */
import { readFileSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import Docker from 'dockerode';

const [address = '', pki = '', service = ''] = process.argv.slice(2);
const [host, port] = address.split(':');
const docker = new Docker({
  protocol: 'https',
  host,
  port: Number(port),
  ca: readFileSync(`${pki}/ca.crt`),
  cert: readFileSync(`${pki}/platform.crt`),
  key: readFileSync(`${pki}/platform.key`),
  timeout: 10_000,
});
const timed = async <T>(label: string, step: () => Promise<T>): Promise<T> => {
  const started = performance.now();
  const result = await step();
  console.log(`${label}: ${(performance.now() - started).toFixed(0)} ms`);
  return result;
};

const containers = await timed('list the task containers (label com.docker.swarm.service.name)', () =>
  docker.listContainers({ filters: { label: [`com.docker.swarm.service.name=${service}`] } }),
);
const id = containers[0]?.Id;
if (!id) throw new Error(`no container of ${service} on ${address}`);
const container = docker.getContainer(id);
console.log(`container ${id.slice(0, 12)} ${containers[0]!.Names[0]} on ${(await docker.info()).Name}`);

// A terminal: TTY, stdin attached, hijacked; what the user types goes in, the shell's output comes back.
await timed('exec with a TTY and stdin (terminal): `echo` typed, answer read', async () => {
  const exec = await container.exec({ Cmd: ['sh'], AttachStdin: true, AttachStdout: true, AttachStderr: true, Tty: true });
  const stream = await exec.start({ hijack: true, stdin: true, Tty: true });
  let out = '';
  stream.on('data', (chunk: Buffer) => (out += chunk.toString()));
  stream.write('echo typed-on-$(hostname)\nexit\n');
  await new Promise((resolve) => stream.on('end', resolve));
  console.log(`  terminal saw: ${JSON.stringify(out.split(/\r?\n/).find((l) => l.startsWith('typed-on-')))}`);
});

// A command for database admin or a backup: stdout and stderr apart, exit code.
await timed('exec without a TTY (admin query / backup dump): stdout, stderr, exit code', async () => {
  const exec = await container.exec({ Cmd: ['sh', '-c', 'echo rows; echo warning >&2; exit 3'], AttachStdout: true, AttachStderr: true });
  const stream = await exec.start({ hijack: true, stdin: false });
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let o = '';
  let e = '';
  stdout.on('data', (c: Buffer) => (o += c));
  stderr.on('data', (c: Buffer) => (e += c));
  docker.modem.demuxStream(stream, stdout, stderr);
  await new Promise((resolve) => stream.on('end', resolve));
  const inspected = await exec.inspect();
  console.log(`  stdout ${JSON.stringify(o)}, stderr ${JSON.stringify(e)}, exit ${inspected.ExitCode}`);
});

await timed('one stats sample (metrics)', async () => {
  const stats = (await container.stats({ stream: false })) as {
    memory_stats: { usage?: number };
    cpu_stats: { cpu_usage: { total_usage: number } };
  };
  console.log(`  memory ${stats.memory_stats.usage} B, cpu total ${stats.cpu_stats.cpu_usage.total_usage} ns`);
});

await timed('logs (runtime logs; follow works the same)', async () => {
  const logs = (await container.logs({ stdout: true, stderr: true, tail: 5, timestamps: true })) as Buffer;
  console.log(`  ${logs.length} bytes of log`);
});

await timed('a file through the archive API (a backup copy)', async () => {
  const archive = await container.getArchive({ path: '/app/server.js' });
  let bytes = 0;
  for await (const chunk of archive as AsyncIterable<Buffer>) bytes += chunk.length;
  console.log(`  tar of /app/server.js: ${bytes} bytes`);
});
