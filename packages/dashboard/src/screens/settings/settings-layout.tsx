import { useQuery } from '@tanstack/react-query';
import { NavLink, Outlet } from 'react-router';
import { PageTitle } from '../../components/ui';
import { useTRPC } from '../../lib/trpc';

/** The account's own settings for everyone; API keys, users and the platform's settings for owners and admins. */
export default function SettingsLayout() {
  const trpc = useTRPC();
  const me = useQuery(trpc.user.me.queryOptions());
  const admin = me.data?.user.role === 'owner' || me.data?.user.role === 'admin';
  const tabs: Array<[string, string]> = [
    ['', 'Account'],
    ['tokens', 'Personal tokens'],
    ...(admin
      ? ([
          ['api-keys', 'API keys'],
          ['users', 'Users'],
          ['platform', 'Platform'],
        ] as Array<[string, string]>)
      : []),
  ];
  return (
    <>
      <PageTitle>Settings</PageTitle>
      <nav className="tabs-list" aria-label="Settings">
        {tabs.map(([path, label]) => (
          <NavLink key={path} to={path ? `/settings/${path}` : '/settings'} end>
            {label}
          </NavLink>
        ))}
      </nav>
      <Outlet />
    </>
  );
}
