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

/**
 * The same answers from busybox (a 2 MB image, so a cluster's nodes pull it in a moment): httpd on port 3000 runs
 * a CGI script for `/` that answers `version $VERSION <hostname> <body>`. A start command (`sh -c`).
 */
export const BUSYBOX_SERVER = [
  'mkdir -p /www/cgi-bin',
  `printf '%s\\n' '#!/bin/sh' 'body=' '[ "\${CONTENT_LENGTH:-0}" -gt 0 ] && body=$(head -c "$CONTENT_LENGTH")' 'printf "Content-Type: text/plain\\r\\n\\r\\nversion %s %s %s\\n" "$VERSION" "$(hostname)" "$body"' > /www/cgi-bin/index.cgi`,
  'chmod +x /www/cgi-bin/index.cgi',
  'exec httpd -f -p 3000 -h /www',
].join(' && ');
