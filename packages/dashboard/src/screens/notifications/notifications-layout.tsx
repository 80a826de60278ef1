import { NavLink, Outlet } from 'react-router';
import { PageTitle } from '../../components/ui';

/** Where the platform's events go: channels, the rules that route events to them, and every delivery. */
export default function NotificationsLayout() {
  const tabs: Array<[string, string]> = [
    ['', 'Channels'],
    ['rules', 'Rules'],
    ['deliveries', 'Deliveries'],
  ];
  return (
    <>
      <PageTitle>Notifications</PageTitle>
      <nav className="tabs-list" aria-label="Notifications">
        {tabs.map(([path, label]) => (
          <NavLink key={path} to={path ? `/notifications/${path}` : '/notifications'} end>
            {label}
          </NavLink>
        ))}
      </nav>
      <Outlet />
    </>
  );
}
