import { Link } from 'react-router';

export default function NotFound() {
  return (
    <>
      <h1>Page not found</h1>
      <p>
        Nothing lives at this address. <Link to="/projects">Go to projects</Link>
      </p>
    </>
  );
}
