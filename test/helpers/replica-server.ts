/**
 * A node one-liner for replica tests: answers `version $VERSION <hostname> <body>`, so a test sees which replica
 * answered and that a POST's body arrived; listens on PORT and closes on SIGTERM.
 */
export const NODE_SERVER = [
  'const http = require("http"); const os = require("os");',
  'const server = http.createServer((req, res) => { let body = ""; req.on("data", (c) => (body += c));',
  'req.on("end", () => { res.setHeader("content-type", "text/plain"); res.end("version " + process.env.VERSION + " " + os.hostname() + " " + body + "\\n"); }); });',
  'server.listen(Number(process.env.PORT));',
  'process.on("SIGTERM", () => server.close(() => process.exit(0)));',
].join(' ');
