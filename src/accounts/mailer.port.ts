/** Outgoing mail (password resets). The SMTP adapter lives in adapters/mail. */
export interface MailMessage {
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  /** Resolves once the server accepted the message; rejects on any failure, within its own timeout. */
  send(message: MailMessage, signal?: AbortSignal): Promise<void>;
}
