// The benches' baseline: a koa "hello" in plain JavaScript, started with the same node and V8 flags as
// `npm start` (no TypeScript loader in its memory). Over IPC it takes bodies to answer GET paths with
// (objects, serialised per request as any server without a response cache must); until then `/` says hello.
import { createServer } from 'node:http';
import Koa from 'koa';

const bodies = new Map();
process.on('message', (message) => {
  for (const [p, body] of Object.entries(message.bodies ?? {})) bodies.set(p, body);
  process.send({ loaded: bodies.size });
});
const app = new Koa();
app.use((ctx) => {
  if (ctx.method === 'GET' && ctx.path === '/') {
    ctx.body = { hello: 'world' };
    return;
  }
  const body = ctx.method === 'GET' ? bodies.get(ctx.path) : undefined;
  if (body === undefined) {
    ctx.status = 404;
    ctx.body = { error: 'not_found' };
    return;
  }
  ctx.body = body;
});
const server = createServer(app.callback());
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
process.once('SIGTERM', () => server.close(() => process.exit(0)));
process.once('disconnect', () => process.exit(0));
