import { createHash } from 'node:crypto';
import type { GitProvider } from '../../src/git-hooks/git-provider.port.js';
import type { HookEvent, HookRequest } from '../../src/git-hooks/hook-event.js';
import { object, optionalObject, optionalString, string } from './hook-support.js';

/**
 * Docker Hub's repository webhook, through the same port as the git hosts: `{callback_url, push_data:
 * {tag, pushed_at, pusher}, repository: {repo_name, namespace, name}}`. Docker Hub signs nothing (no
 * header, no secret), so a delivery is never trusted: it only makes the platform ask the registry for the
 * tag's digest now, and an image service deploys only when that digest moved (as digest polling would).
 */
export class DockerHubProvider implements GitProvider {
  readonly id = 'dockerhub' as const;

  /** No header names Docker Hub: its body's shape does, and only for a request no signing provider claimed. */
  recognizes(request: HookRequest): boolean {
    try {
      const body = JSON.parse(request.body.toString('utf8')) as Record<string, unknown>;
      return typeof body.callback_url === 'string' && optionalObject(body.push_data) !== null && optionalObject(body.repository) !== null;
    } catch {
      return false;
    }
  }

  eventName(): string {
    return 'push';
  }

  /** Docker Hub sends no id; its retries send the same body. */
  deliveryId(request: HookRequest): string | null {
    return `sha256:${createHash('sha256').update(request.body).digest('hex')}`;
  }

  verify(): boolean {
    return false;
  }

  parse(_request: HookRequest, payload: unknown): HookEvent[] {
    const body = object(payload, 'The body');
    const pushData = object(body.push_data, 'push_data');
    const repository = object(body.repository, 'repository');
    const name =
      optionalString(repository.repo_name) ??
      `${string(repository.namespace, 'repository.namespace')}/${string(repository.name, 'repository.name')}`;
    return [{ kind: 'image_push', repository: name, tag: optionalString(pushData.tag) ?? 'latest' }];
  }
}
