import { useQuery } from '@tanstack/react-query';
import { useParams } from 'react-router';
import { useLivePoll } from '../../components/live-updates';
import { type RouterOutputs, useTRPC } from '../../lib/trpc';

export type Overview = RouterOutputs['services']['overview'];

/**
 * The service's overview: refetched on each of its events (the shell's event stream), and every 3 s
 * while the stream is down, so status and deployment states change on screen.
 */
export function useServiceOverview() {
  const { serviceId = '' } = useParams();
  const trpc = useTRPC();
  const every = useLivePoll(3_000);
  const overview = useQuery({ ...trpc.services.overview.queryOptions({ serviceId }), refetchInterval: every });
  return { serviceId, overview };
}

export function isDatabase(service: Overview['service']): boolean {
  return service.repoUrl === 'database' || !!service.repoFullName?.startsWith('database:');
}

export function engineOf(service: Overview['service']): string | null {
  return service.repoFullName?.startsWith('database:') ? service.repoFullName.slice('database:'.length) : null;
}
