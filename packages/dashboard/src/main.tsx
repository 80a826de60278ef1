import { QueryClientProvider } from '@tanstack/react-query';
import { StrictMode, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { RouterProvider } from 'react-router';
import { createApiClient, createQueryClient, TRPCProvider } from './lib/trpc';
import { appRouter } from './routes';
import './styles.css';

function App() {
  const [queryClient] = useState(createQueryClient);
  const [trpcClient] = useState(() => createApiClient());
  return (
    <QueryClientProvider client={queryClient}>
      <TRPCProvider trpcClient={trpcClient} queryClient={queryClient}>
        <RouterProvider router={appRouter} />
      </TRPCProvider>
    </QueryClientProvider>
  );
}

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
