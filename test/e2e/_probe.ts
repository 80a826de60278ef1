import { startServerProcess, api } from '../helpers/server-process.js';
const s = await startServerProcess({ RATE_LIMIT_PER_MINUTE: '5', AUTH_FAILURES_PER_MINUTE: '3' });
const a = api(s.url, s.token);
const n = api(s.url, undefined);
const show = async (label: string, p: Promise<any>) => { const r = await p; console.log(label, r.status, r.headers.get('retry-after'), r.text.slice(0, 200)); return r; };
try {
  await show('noauth malformed', n('POST', '/api/projects', '{bad'));
  await show('noauth name5', n('POST', '/api/projects', { name: 5 }));
  await show('noauth big', n('POST', '/api/projects', { d: 'x'.repeat(2 * 1024 * 1024) }));
  await show('noauth trailing', n('GET', '/api/projects/'));
  for (let i = 0; i < 7; i++) await show('rl ' + i, a('GET', '/api/projects/'));
  for (let i = 0; i < 5; i++) await show('bad ' + i, api(s.url, 'bad' + i)('GET', '/api/projects'));
  await show('bad sse', api(s.url, 'bad')('GET', '/api/deployments/x/stream'));
  await show('none after lockout', n('GET', '/api/projects'));
} finally { await s.dispose(); }
