import type { Transporter } from 'nodemailer';
import type { Mailer, MailMessage } from '../../src/index.js';

/**
 * Mail over SMTP from a URL (`smtp://user:pass@host:587`, `smtps://...:465`). The URL holds
 * credentials: it is never logged, and errors are reported by their message only.
 */
export class SmtpMailer implements Mailer {
  /** nodemailer loads with the first mail: most starts send none. */
  private readonly transport: Promise<Transporter>;

  constructor(
    url: string,
    private readonly from: string,
    timeoutMs = 10_000,
  ) {
    const parsed = new URL(url);
    this.transport = import('nodemailer').then(({ default: nodemailer }) =>
      nodemailer.createTransport({
        host: parsed.hostname,
        port: parsed.port ? Number(parsed.port) : parsed.protocol === 'smtps:' ? 465 : 587,
        secure: parsed.protocol === 'smtps:',
        auth: parsed.username ? { user: decodeURIComponent(parsed.username), pass: decodeURIComponent(parsed.password) } : undefined,
        // A plain smtp:// URL to a local relay (or the tests' server) needs no TLS; any other upgrades when offered.
        ignoreTLS: parsed.searchParams.get('tls') === 'off',
        connectionTimeout: timeoutMs,
        greetingTimeout: timeoutMs,
        socketTimeout: timeoutMs,
      }),
    );
  }

  async send(message: MailMessage, signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    const sent = (await this.transport).sendMail({ from: this.from, to: message.to, subject: message.subject, text: message.text });
    if (!signal) {
      await sent;
      return;
    }
    await new Promise<void>((resolve, reject) => {
      const onAbort = () => reject(signal.reason instanceof Error ? signal.reason : new Error('mail aborted'));
      signal.addEventListener('abort', onAbort, { once: true });
      sent.then(
        () => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        },
        (error: unknown) => {
          signal.removeEventListener('abort', onAbort);
          reject(error instanceof Error ? error : new Error('mail failed'));
        },
      );
    });
  }

  close(): void {
    void this.transport.then((transport) => transport.close());
  }
}
