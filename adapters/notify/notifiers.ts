import type { Notifier } from '../../src/index.js';
import { DiscordNotifier } from './discord.notifier.js';
import { EmailNotifier } from './email.notifier.js';
import { GotifyNotifier } from './gotify.notifier.js';
import { GuardedHttp } from './guarded-http.js';
import { NtfyNotifier } from './ntfy.notifier.js';
import { SlackNotifier } from './slack.notifier.js';
import { TeamsNotifier } from './teams.notifier.js';
import { TelegramNotifier } from './telegram.notifier.js';
import { WebhookNotifier } from './webhook.notifier.js';

/** One notifier per channel family over one guarded HTTP client; a new family is one file and one line here. */
export function createNotifiers(options: { allowPrivate: () => boolean; telegramApiUrl: () => string }): {
  notifiers: Notifier[];
  guard: GuardedHttp;
} {
  const http = new GuardedHttp({ allowPrivate: options.allowPrivate });
  return {
    guard: http,
    notifiers: [
      new EmailNotifier(),
      new SlackNotifier(http),
      new DiscordNotifier(http),
      new TelegramNotifier(http, options.telegramApiUrl),
      new TeamsNotifier(http),
      new NtfyNotifier(http),
      new GotifyNotifier(http),
      new WebhookNotifier(http),
    ],
  };
}
