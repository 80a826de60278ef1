// PLACEHOLDER, NOT THE REAL SERVER. It only lets test/provision/images.sh build and check the mongo:7
// stand-in image before the MongoDB wire-protocol server exists: the real server.mjs, written on the
// mongo-wire branch, replaces this file when that branch is merged (keep theirs).
//
// What it does: parses `--port N --dbpath DIR --bind_ip_all`, loads `bson` (as the real one will, from
// node_modules beside it), notes in DIR whether it is a fresh or a reused data directory, accepts TCP
// connections on the port (and answers nothing), and exits cleanly on SIGTERM/SIGINT (it is PID 1).
import { createServer } from 'node:net';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BSON } from 'bson';

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const port = Number(opt('--port', '27017'));
const dbpath = opt('--dbpath', '/data/db');
const host = args.includes('--bind_ip_all') ? '0.0.0.0' : opt('--bind_ip', '127.0.0.1');

const marker = join(dbpath, 'placeholder-initialized');
if (existsSync(marker)) {
  console.log(`mongo-wire placeholder: reusing ${dbpath} (initialized ${readFileSync(marker, 'utf8').trim()})`);
} else {
  writeFileSync(marker, `${new Date().toISOString()} for ${process.env.MONGO_INITDB_ROOT_USERNAME ?? '(no root user)'}\n`);
  console.log(`mongo-wire placeholder: initialized ${dbpath}`);
}

const sockets = new Set();
const server = createServer((socket) => {
  sockets.add(socket);
  socket.on('close', () => sockets.delete(socket));
  socket.on('error', () => {});
});
server.listen(port, host, () => {
  console.log(`mongo-wire placeholder: listening on ${host}:${port} (bson ${BSON.serialize({ ok: 1 }).length}-byte doc)`);
});
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => {
    console.log(`mongo-wire placeholder: ${signal}, shutting down`);
    for (const socket of sockets) socket.destroy();
    server.close(() => process.exit(0));
  });
}
