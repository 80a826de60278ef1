import { isRouteErrorResponse, Link, useRouteError } from 'react-router';

/**
 * A screen that failed to load (a chunk missing after an upgrade, a connection dropped while it was fetched) or
 * threw while rendering. In the shell it is the content of the shell's own <main>; alone (sign-in, or the shell
 * itself failed) it is the page's.
 */
export function RouteError({ inShell = false }: { inShell?: boolean }) {
  const error = useRouteError();
  const message = isRouteErrorResponse(error)
    ? `${error.status} ${error.statusText}`
    : error instanceof Error
      ? error.message
      : String(error);
  const content = (
    <>
      <h1>Something went wrong</h1>
      <div className="alert" role="alert">
        {message}
      </div>
      <p>
        <button type="button" onClick={() => window.location.reload()}>
          Reload the page
        </button>{' '}
        <Link to="/projects">Go to projects</Link>
      </p>
    </>
  );
  return inShell ? (
    content
  ) : (
    <main className="main" id="main">
      {content}
    </main>
  );
}
