import type { Mailer } from '../accounts/mailer.port.js';
import type { ServiceDeps } from '../platform/deps.js';
import type { ChannelRecord, ChannelConfig } from './notification.records.js';
import { DeliveryError, type NotificationMessage, type Notifier } from './notifier.port.js';

/** A mailer for one send: the settings' SMTP server (closed after) or SMTP_URL's. */
export interface MailerLease {
  mailer: Mailer;
  release(): void;
}

export interface SendOutcome {
  ok: boolean;
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
}

/** Errors are kept to one line of this length on attempts and channels. */
const ERROR_LENGTH = 500;

/**
 * Sends one message to one channel through its family's Notifier, within the delivery timeout,
 * and says how it went. It never throws: every failure becomes the attempt's error, in words a user
 * can act on (the receiver's status and answer, a timeout, a refused target).
 */
export class ChannelSender {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly notifiers: ReadonlyMap<string, Notifier>,
    private readonly mailer: () => Promise<MailerLease | null>,
  ) {}

  configOf(channel: ChannelRecord): ChannelConfig {
    return JSON.parse(this.deps.secrets.decrypt(channel.configEncrypted)) as ChannelConfig;
  }

  async send(channel: ChannelRecord, message: NotificationMessage, outer?: AbortSignal): Promise<SendOutcome> {
    const started = performance.now();
    const timeoutMs = this.deps.config.events.deliveryTimeoutMs;
    const signal = outer ? AbortSignal.any([outer, AbortSignal.timeout(timeoutMs)]) : AbortSignal.timeout(timeoutMs);
    let lease: MailerLease | null = null;
    try {
      const notifier = this.notifiers.get(channel.type);
      if (!notifier) throw new DeliveryError(`This platform has no ${channel.type} notifier`);
      if (channel.type === 'email') {
        lease = await this.mailer();
        if (!lease) throw new DeliveryError('No SMTP server is configured (settings smtpUrl, or SMTP_URL)');
      }
      const target = {
        config: this.configOf(channel),
        secret: channel.secretEncrypted ? this.deps.secrets.decrypt(channel.secretEncrypted) : null,
        mailer: lease?.mailer ?? null,
      };
      const result = await withSignal(notifier.send(message, target, signal), signal, timeoutMs);
      return { ok: true, statusCode: result.statusCode, latencyMs: elapsed(started), error: null };
    } catch (error) {
      const statusCode = error instanceof DeliveryError ? error.statusCode : null;
      const text = signal.aborted && !(error instanceof DeliveryError) ? `No answer within ${timeoutMs / 1000} s` : errorText(error);
      return { ok: false, statusCode, latencyMs: elapsed(started), error: text.slice(0, ERROR_LENGTH) };
    } finally {
      lease?.release();
    }
  }
}

const elapsed = (started: number) => Math.max(0, Math.round(performance.now() - started));

function errorText(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/\s+/g, ' ').trim() || 'The send failed';
}

/** A notifier that ignores its signal still ends at the timeout. */
function withSignal<T>(work: Promise<T>, signal: AbortSignal, timeoutMs: number): Promise<T> {
  if (signal.aborted) return Promise.reject(new DeliveryError(`No answer within ${timeoutMs / 1000} s`));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new DeliveryError(`No answer within ${timeoutMs / 1000} s`));
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
