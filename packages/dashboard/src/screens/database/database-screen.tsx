import * as Tabs from '@radix-ui/react-tabs';
import { useSearchParams } from 'react-router';
import { QueryState } from '../../components/ui';
import { engineOf, useServiceOverview } from '../service/use-service';
import { Backups } from './backups';
import { Imports } from './imports';
import { PointInTime } from './point-in-time';
import { QueryConsole } from './query-console';
import { TableBrowser } from './table-browser';
import { TlsInfo } from './tls-info';

/** A database service's data: tables and rows, a query console, backups, imports, point-in-time recovery and TLS. */
export default function DatabaseScreen() {
  const { serviceId, overview } = useServiceOverview();
  const [params, setParams] = useSearchParams();
  const tab = params.get('tab') ?? 'tables';
  return (
    <QueryState query={overview}>
      {({ service }) => {
        const engine = engineOf(service) ?? 'postgres';
        const pgLike = engine === 'postgres' || engine === 'timescale';
        return (
          <Tabs.Root value={tab} onValueChange={(v) => setParams({ tab: v }, { replace: true })}>
            <Tabs.List className="tabs-list" aria-label="Database">
              <Tabs.Trigger value="tables">Tables</Tabs.Trigger>
              <Tabs.Trigger value="query">Query</Tabs.Trigger>
              <Tabs.Trigger value="backups">Backups</Tabs.Trigger>
              <Tabs.Trigger value="imports">Imports</Tabs.Trigger>
              {pgLike ? <Tabs.Trigger value="pitr">Point in time</Tabs.Trigger> : null}
              {pgLike ? <Tabs.Trigger value="tls">TLS</Tabs.Trigger> : null}
            </Tabs.List>
            <Tabs.Content value="tables">
              <TableBrowser serviceId={serviceId} />
            </Tabs.Content>
            <Tabs.Content value="query">
              <QueryConsole serviceId={serviceId} engine={engine} />
            </Tabs.Content>
            <Tabs.Content value="backups">
              <Backups serviceId={serviceId} />
            </Tabs.Content>
            <Tabs.Content value="imports">
              <Imports serviceId={serviceId} engine={engine} />
            </Tabs.Content>
            {pgLike ? (
              <Tabs.Content value="pitr">
                <PointInTime serviceId={serviceId} />
              </Tabs.Content>
            ) : null}
            {pgLike ? (
              <Tabs.Content value="tls">
                <TlsInfo serviceId={serviceId} />
              </Tabs.Content>
            ) : null}
          </Tabs.Root>
        );
      }}
    </QueryState>
  );
}
