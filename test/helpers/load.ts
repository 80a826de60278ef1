import { Agent, request } from 'node:http';
import { randomBytes } from 'node:crypto';

/**
 * A small load through the proxy for zero-failure proofs: `clients` keep-alive clients, every other one POSTing,
 * each sending one request after the other to `hostname` on 127.0.0.1:`port`. The app answers
 * `version <n> <host> <body>` (test/helpers/replica-server.ts); a non-200, an error, or a POST whose body did not
 * arrive (a proxy's retry may resend it empty) is a failure.
 */
export class Load {
  total = 0;
  readonly failures: string[] = [];
  /** When each failed request was sent (Date.now()), beside `failures`: which were sent before an incident's end. */
  readonly failedSentAt: number[] = [];
  readonly versions = new Map<string, number>();
  /** The hosts (containers, tasks) that answered, with their counts. */
  readonly hosts = new Map<string, number>();
  /** When each failure happened (Date.now()), beside `failures`. */
  readonly failedAt: number[] = [];
  private running = false;
  private done: Promise<void>[] = [];
  private readonly agent: Agent;

  constructor(
    private readonly port: number,
    private readonly hostname: string,
    private readonly clients = 4,
  ) {
    this.agent = new Agent({ keepAlive: true, maxSockets: clients });
  }

  start(): void {
    this.running = true;
    this.done = Array.from({ length: this.clients }, (_, i) => this.loop(i % 2 === 1 ? 'POST' : 'GET'));
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.done);
    this.agent.destroy();
  }

  private async loop(method: 'GET' | 'POST'): Promise<void> {
    while (this.running) {
      const body = method === 'POST' ? `order=${randomBytes(3).toString('hex')}` : '';
      const sentAt = Date.now();
      const answer = await this.once(method, body);
      this.total++;
      const match = 'text' in answer ? /^version (\d+) (\S+) ?(.*)$/.exec(answer.text.trim()) : null;
      if ('error' in answer || answer.status !== 200 || !match || (match[3] ?? '') !== body) {
        this.failedSentAt.push(sentAt);
        this.failedAt.push(Date.now());
        this.failures.push(`${method}: ${'error' in answer ? answer.error : `${answer.status} ${answer.text.slice(0, 120)}`}`);
        await new Promise((r) => setTimeout(r, 10));
        continue;
      }
      this.versions.set(match[1]!, (this.versions.get(match[1]!) ?? 0) + 1);
      this.hosts.set(match[2]!, (this.hosts.get(match[2]!) ?? 0) + 1);
    }
  }

  private once(method: string, body: string): Promise<{ status: number; text: string } | { error: string }> {
    return new Promise((resolve) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: this.port,
          path: '/',
          method,
          headers: { Host: this.hostname, 'content-type': 'text/plain' },
          agent: this.agent,
          timeout: 10_000,
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
          res.on('error', (error) => resolve({ error: `response: ${error.message}` }));
        },
      );
      req.on('timeout', () => req.destroy(new Error('timed out after 10 s')));
      req.on('error', (error) => resolve({ error: error.message }));
      req.end(body || undefined);
    });
  }
}
