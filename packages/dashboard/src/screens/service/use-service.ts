import { useQuery } from '@tanstack/react-query';
import { useParams } from 'react-router';
import { type RouterOutputs, useTRPC } from '../../lib/trpc';

export type Overview = RouterOutputs['services']['overview'];

/** The service's overview, refreshed every 3 s while a screen of it is open: status and deployment states change on screen. */
export function useServiceOverview() {
  const { serviceId = '' } = useParams();
  const trpc = useTRPC();
  const overview = useQuery({ ...trpc.services.overview.queryOptions({ serviceId }), refetchInterval: 3_000 });
  return { serviceId, overview };
}

export function isDatabase(service: Overview['service']): boolean {
  return service.repoUrl === 'database' || !!service.repoFullName?.startsWith('database:');
}

export function engineOf(service: Overview['service']): string | null {
  return service.repoFullName?.startsWith('database:') ? service.repoFullName.slice('database:'.length) : null;
}
