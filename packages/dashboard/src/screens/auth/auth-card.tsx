import type { ReactNode } from 'react';

export function AuthCard({ title, children }: { title: string; children: ReactNode }) {
  return (
    <main className="auth-page" id="main">
      <div className="card auth-card">
        <p className="brand">
          <img src="/favicon.svg" alt="" width="24" height="24" /> Slipway
        </p>
        <h1>{title}</h1>
        {children}
      </div>
    </main>
  );
}
