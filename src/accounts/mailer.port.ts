/** Outgoing mail (password resets). The SMTP adapter lives in adapters/mail. */
export interface MailMessage {
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  /** Resolves once the server accepted the message; rejects on any failure, within its own timeout. */
  send(message: MailMessage, signal?: AbortSignal): Promise<void>;
  /** Releases the connection, for a mailer made for one message. */
  close?(): void;
}

/** An SMTP server as the settings name it: `smtp://user:pass@host:587` (or smtps://) and the sender. */
export interface SmtpSettings {
  url: string;
  from: string;
}
