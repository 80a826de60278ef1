import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { Navigate, NavLink, Outlet, useLocation, useNavigate } from 'react-router';
import { apiErrorOf } from '../lib/api-error';
import { useTRPC } from '../lib/trpc';
import { NAV } from '../routes';
import { LiveIndicator, LiveUpdates } from './live-updates';
import { ErrorNotice, Loading } from './ui';

/** Signed-in pages: the navigation, the account, and the screen. Without a session: to sign-in (or owner sign-up on a first start). */
export function AppShell() {
  const trpc = useTRPC();
  const me = useQuery({ ...trpc.user.me.queryOptions(), retry: false, staleTime: 60_000 });
  const location = useLocation();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const [menuOpen, setMenuOpen] = useState(false);
  const logout = useMutation(
    trpc.auth.logout.mutationOptions({
      onSettled: () => {
        queryClient.clear();
        navigate('/sign-in');
      },
    }),
  );
  // biome-ignore lint/correctness/useExhaustiveDependencies: the menu closes on every navigation
  useEffect(() => setMenuOpen(false), [location.pathname]);

  if (me.isPending) return <Loading label="Checking your session" />;
  if (me.error) {
    const e = apiErrorOf(me.error);
    if (e.status === 401 || e.code === 'unauthorized' || e.code === 'forbidden') {
      const next = location.pathname + location.search;
      return <Navigate to={`/sign-in${next !== '/' ? `?next=${encodeURIComponent(next)}` : ''}`} replace />;
    }
    return (
      <main className="main">
        <ErrorNotice error={me.error} title="Could not reach the platform" />
        <button type="button" onClick={() => me.refetch()}>
          Try again
        </button>
      </main>
    );
  }
  const user = me.data.user;
  const admin = user.role === 'owner' || user.role === 'admin';
  const nav = NAV.filter((n) => !n.admin || admin);
  const groups = [...new Set(nav.map((n) => n.group))];
  return (
    <LiveUpdates>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <div className="topbar">
        <span className="brand">Slipway</span>
        <button type="button" aria-expanded={menuOpen} aria-controls="sidebar" onClick={() => setMenuOpen(!menuOpen)}>
          Menu
        </button>
      </div>
      <div className="shell">
        <nav id="sidebar" className={`sidebar${menuOpen ? ' open' : ''}`} aria-label="Main">
          <NavLink to="/projects" className="brand">
            <img src="/favicon.svg" alt="" width="24" height="24" /> Slipway
          </NavLink>
          {groups.map((group) => (
            <div key={group}>
              <div className="nav-group">{group}</div>
              <div className="nav">
                {nav
                  .filter((n) => n.group === group)
                  .map((n) => (
                    <NavLink key={n.to} to={n.to}>
                      {n.label}
                    </NavLink>
                  ))}
              </div>
            </div>
          ))}
          <div className="sidebar-foot">
            <LiveIndicator />
            <span>
              {user.name} <span className="muted">({user.role})</span>
            </span>
            <span className="mono" style={{ overflowWrap: 'anywhere' }}>
              {user.email}
            </span>
            <button type="button" onClick={() => logout.mutate()} disabled={logout.isPending}>
              Sign out
            </button>
            <a href="/api/docs">API reference</a>
          </div>
        </nav>
        <main className="main" id="main" tabIndex={-1}>
          <Outlet />
        </main>
      </div>
    </LiveUpdates>
  );
}
