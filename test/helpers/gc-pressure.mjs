/**
 * Preloaded (`--import`) into the server by test/e2e/node-runtimes.test.ts, never by `npm start`: a full
 * garbage collection after every HTTP response and every few milliseconds in between, so native objects
 * (better-sqlite3 statements) are finalized while requests run. That is where better-sqlite3 11 aborted
 * on Node 24. The server is started with --expose-gc; plain JavaScript (.mjs) so no loader is needed.
 */
import diagnosticsChannel from 'node:diagnostics_channel';

const gc = globalThis.gc;
if (typeof gc !== 'function') throw new Error('gc-pressure.mjs needs node --expose-gc');
let collections = 0;
const collect = () => {
  gc();
  collections++;
};
diagnosticsChannel.subscribe('http.server.response.finish', collect);
setInterval(collect, 5).unref();
process.on('exit', () => process.stderr.write(`gc-pressure: ${collections} forced collections\n`));
