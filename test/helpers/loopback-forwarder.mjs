// Runs inside the browser's own network namespace (test/helpers/isolated-chromium.ts): listens on 127.0.0.1 at
// each port given and forwards every connection to the Unix socket `<dir>/<port>.sock`, which the test process
// forwards on to the same port of the host's loopback. Usage: node loopback-forwarder.mjs <dir> <port>...
import { writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';

const [dir, ...ports] = process.argv.slice(2);
const parent = process.ppid;

function pipeBoth(a, b) {
  a.on('error', () => b.destroy());
  b.on('error', () => a.destroy());
  a.pipe(b);
  b.pipe(a);
}

await Promise.all(
  ports.map(
    (port) =>
      new Promise((resolve, reject) => {
        const server = net.createServer((client) => pipeBoth(client, net.connect(path.join(dir, `${port}.sock`))));
        server.once('error', reject);
        server.listen(Number(port), '127.0.0.1', resolve);
      }),
  ),
);
writeFileSync(path.join(dir, 'ready'), '');
// Started in the background by the script that then becomes the browser: once the browser is gone, so is this.
setInterval(() => {
  if (process.ppid !== parent) process.exit(0);
}, 500);
