import type { ComponentType } from 'react';
import { createBrowserRouter, Navigate, type RouteObject } from 'react-router';
import { AppShell } from './components/app-shell';
import { RouteError } from './components/route-error';

/** Each screen is its own chunk, loaded when its route is first visited: the shell stays small. */
function screen(load: () => Promise<{ default: ComponentType }>): Pick<RouteObject, 'lazy'> {
  return { lazy: async () => ({ Component: (await load()).default }) };
}

/**
 * The dashboard's navigation. A screen another part of the platform brings later (servers,
 * notifications and channels, webhook deliveries, previews, the audit log) is one entry here and one
 * route below: the shell, the sign-in guard and the mobile menu pick it up.
 */
export interface NavEntry {
  to: string;
  label: string;
  group: 'Build' | 'Manage';
  /** Shown to the install's owners and admins only (the API refuses the others). */
  admin?: boolean;
}
export const NAV: readonly NavEntry[] = [
  { to: '/projects', label: 'Projects', group: 'Build' },
  { to: '/databases', label: 'Databases', group: 'Build' },
  { to: '/storage', label: 'Storage', group: 'Build' },
  { to: '/servers', label: 'Servers', group: 'Manage', admin: true },
  { to: '/notifications', label: 'Notifications', group: 'Manage', admin: true },
  { to: '/audit', label: 'Audit log', group: 'Manage', admin: true },
  { to: '/settings', label: 'Settings', group: 'Manage' },
];

export const routes: RouteObject[] = [
  { path: '/sign-in', ...screen(() => import('./screens/auth/sign-in')), errorElement: <RouteError /> },
  { path: '/sign-up', ...screen(() => import('./screens/auth/sign-up')), errorElement: <RouteError /> },
  { path: '/reset-password', ...screen(() => import('./screens/auth/reset-password')), errorElement: <RouteError /> },
  {
    path: '/',
    element: <AppShell />,
    errorElement: <RouteError />,
    children: [
      {
        // A screen that threw or whose code did not load (a dropped connection, a release replaced under the
        // page) shows its error inside the shell: the navigation, the account and Sign out stay.
        errorElement: <RouteError inShell />,
        children: [
          { index: true, element: <Navigate to="/projects" replace /> },
          { path: 'projects', ...screen(() => import('./screens/projects/project-list')) },
          { path: 'projects/:projectSlug', ...screen(() => import('./screens/projects/project-detail')) },
          { path: 'projects/:projectSlug/audit', ...screen(() => import('./screens/projects/project-audit')) },
          {
            path: 'services/:serviceId',
            ...screen(() => import('./screens/service/service-layout')),
            children: [
              { index: true, ...screen(() => import('./screens/service/service-overview')) },
              { path: 'variables', ...screen(() => import('./screens/service/variables')) },
              { path: 'deployments', ...screen(() => import('./screens/service/deployments')) },
              { path: 'deployments/:deploymentId', ...screen(() => import('./screens/service/deployment-detail')) },
              { path: 'logs', ...screen(() => import('./screens/service/runtime-logs')) },
              { path: 'metrics', ...screen(() => import('./screens/service/metrics')) },
              { path: 'terminal', ...screen(() => import('./screens/service/terminal')) },
              { path: 'volumes', ...screen(() => import('./screens/service/volumes')) },
              { path: 'database', ...screen(() => import('./screens/database/database-screen')) },
              { path: 'push', ...screen(() => import('./screens/service/push-previews')) },
              { path: 'settings', ...screen(() => import('./screens/service/service-settings')) },
            ],
          },
          { path: 'servers', ...screen(() => import('./screens/servers/server-list')) },
          { path: 'servers/:serverId', ...screen(() => import('./screens/servers/server-detail')) },
          {
            path: 'notifications',
            ...screen(() => import('./screens/notifications/notifications-layout')),
            children: [
              { index: true, ...screen(() => import('./screens/notifications/channels')) },
              { path: 'rules', ...screen(() => import('./screens/notifications/rules')) },
              { path: 'deliveries', ...screen(() => import('./screens/notifications/deliveries')) },
            ],
          },
          { path: 'audit', ...screen(() => import('./screens/audit/audit-log')) },
          { path: 'databases', ...screen(() => import('./screens/database/database-list')) },
          { path: 'storage', ...screen(() => import('./screens/storage/storage-list')) },
          {
            path: 'settings',
            ...screen(() => import('./screens/settings/settings-layout')),
            children: [
              { index: true, ...screen(() => import('./screens/settings/account')) },
              { path: 'tokens', ...screen(() => import('./screens/settings/personal-tokens')) },
              { path: 'api-keys', ...screen(() => import('./screens/settings/api-keys')) },
              { path: 'users', ...screen(() => import('./screens/settings/users')) },
              { path: 'platform', ...screen(() => import('./screens/settings/platform')) },
            ],
          },
          { path: '*', ...screen(() => import('./screens/not-found')) },
        ],
      },
    ],
  },
];

export const appRouter = createBrowserRouter(routes);
