import { isRouteErrorResponse, Link, useRouteError } from 'react-router';

/** A screen that failed to load (a chunk missing after an upgrade) or threw while rendering. */
export function RouteError() {
  const error = useRouteError();
  const message = isRouteErrorResponse(error)
    ? `${error.status} ${error.statusText}`
    : error instanceof Error
      ? error.message
      : String(error);
  return (
    <main className="main" id="main">
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
    </main>
  );
}
