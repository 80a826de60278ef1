// The spike's app: a keep-alive HTTP server answering `version $VERSION <hostname>`; a POST answers the
// length of the body it read (so a retried POST whose body was lost shows as `posted 0`). /health is
// what Docker's HEALTHCHECK asks. SIGTERM: stop listening, let requests in flight finish, close idle
// keep-alive connections, exit.
const http = require('http');
const os = require('os');
const version = process.env.VERSION || '0';
let healthy = process.env.START_UNHEALTHY !== '1';
const server = http.createServer((req, res) => {
  if (req.url === '/health') {
    res.statusCode = healthy ? 200 : 503;
    return res.end(healthy ? 'ok\n' : 'unhealthy\n');
  }
  if (req.url === '/sick') { healthy = false; return res.end('now unhealthy\n'); }
  let length = 0;
  req.on('data', (chunk) => (length += chunk.length));
  req.on('end', () => {
    res.setHeader('content-type', 'text/plain');
    res.end(`version ${version} ${os.hostname()}${req.method === 'POST' ? ` posted ${length}` : ''}\n`);
  });
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT || 3000));
process.on('SIGTERM', () => {
  server.close(() => process.exit(0));
  server.closeIdleConnections();
  setTimeout(() => process.exit(0), 10_000).unref();
});
