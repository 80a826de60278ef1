import { DeliveryError, type ChannelTarget, type NotificationMessage, type Notifier, type SendResult } from '../../src/index.js';

/** Email through the platform's SMTP mailer (the settings' server, or SMTP_URL): a plain-text mail per message. */
export class EmailNotifier implements Notifier {
  readonly type = 'email' as const;

  async send(message: NotificationMessage, target: ChannelTarget, signal: AbortSignal): Promise<SendResult> {
    if (!target.mailer) throw new DeliveryError('No SMTP server is configured (settings smtpUrl, or SMTP_URL)');
    const to = (target.config.to as string[]).join(', ');
    const text = [
      message.text,
      '',
      ...message.fields.map((f) => `${f.name}: ${f.value}`),
      '',
      `Event: ${message.eventType}`,
      `At: ${message.occurredAt.toISOString()}`,
      ...(message.event ? [`Event id: ${message.event.id}`] : []),
      '',
      '-- Slipway notifications',
    ].join('\n');
    try {
      await target.mailer.send({ to, subject: `[Slipway] ${message.title}`, text }, signal);
    } catch (error) {
      const code = (error as { responseCode?: number }).responseCode;
      throw new DeliveryError(`The SMTP server refused the mail: ${(error as Error).message}`, typeof code === 'number' ? code : null);
    }
    return { statusCode: 250 };
  }
}
