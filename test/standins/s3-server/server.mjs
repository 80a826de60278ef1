#!/usr/bin/env node
/**
 * The test stand-in for the storage instances' server (Versity S3 Gateway, `versitygw`), where no
 * image registry is reachable. It is NOT versitygw: the S3 protocol is s3rver's (npm, a real S3
 * server the AWS SDK talks to), behind a front door that does what s3rver does not:
 *
 * - takes versitygw's command line and env: `[global flags] posix <dir>`, the root key pair in
 *   ROOT_ACCESS_KEY(_ID) / ROOT_SECRET_(ACCESS_)KEY (or --access / --secret), the listen address in
 *   VGW_PORT (or --port, default :7070), the region in VGW_REGION (or --region, default us-east-1),
 *   an unauthenticated health path in VGW_HEALTH (or --health); it refuses to start without a key pair;
 * - checks every request's AWS Signature V4 (Authorization header or presigned query) against that
 *   key pair, region and time, as S3 does: s3rver checks V4 requests' access key id only. Anonymous
 *   requests are refused (AccessDenied). The payload hash is signed but not compared with the body
 *   (s3rver streams it), and aws-chunked bodies are refused (501): s3rver cannot decode them.
 *
 * Objects are s3rver's files under <dir> (`<bucket>/<key>._S3rver_object`), not versitygw's plain
 * files. README.md next to this file says what was tested against it.
 *
 * In-process (the unit test): `const s = await startServer({ port: 0, dir, accessKeyId, secretAccessKey })`.
 * Plain JavaScript (ESM) for Node 18+; depends on s3rver and Node's built-ins.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const S3rver = require('s3rver');
const AWSAccount = require('s3rver/lib/models/account');

const MAX_SKEW_MS = 15 * 60_000;
const MAX_PRESIGNED_SECONDS = 7 * 24 * 3600;

/** The flags versitygw takes before its backend that this stand-in honours; any other is an error. */
const GLOBAL_FLAGS = {
  '--port': 'port',
  '-p': 'port',
  '--access': 'access',
  '-a': 'access',
  '--secret': 'secret',
  '-s': 'secret',
  '--region': 'region',
  '-r': 'region',
  '--health': 'health',
};

/** versitygw's argv and env, as far as this stand-in goes. Throws with a message for anything else. */
export function parseArgs(argv, env) {
  const options = {
    port: env.VGW_PORT || ':7070',
    access: env.ROOT_ACCESS_KEY_ID || env.ROOT_ACCESS_KEY || '',
    secret: env.ROOT_SECRET_ACCESS_KEY || env.ROOT_SECRET_KEY || '',
    region: env.VGW_REGION || 'us-east-1',
    health: env.VGW_HEALTH || '',
    quiet: env.VGW_QUIET === 'true',
  };
  const args = [...argv];
  while (args.length > 0 && args[0].startsWith('-')) {
    const arg = args.shift();
    const [flag, inline] = arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    if (flag === '--quiet' || flag === '-q') {
      options.quiet = true;
      continue;
    }
    const name = GLOBAL_FLAGS[flag];
    if (!name) throw new Error(`flag ${flag} is not supported by this stand-in`);
    const value = inline ?? args.shift();
    if (value === undefined) throw new Error(`flag ${flag} needs a value`);
    options[name] = value;
  }
  const [backend, dir, ...rest] = args;
  if (backend !== 'posix') throw new Error(`backend ${backend ?? '(none)'} is not supported by this stand-in: only posix <dir>`);
  if (!dir) throw new Error('posix needs the directory it serves');
  if (rest.length > 0) throw new Error(`posix options are not supported by this stand-in: ${rest.join(' ')}`);
  if (!options.access || !options.secret) throw new Error('root user access and secret key must be provided');
  const match = /^(.*):(\d+)$/.exec(options.port);
  if (!match) throw new Error(`invalid listen address ${options.port}: <ip>:<port> or :<port>`);
  return { ...options, host: match[1] || '0.0.0.0', port: Number(match[2]), dir };
}

// --- Signature V4 ----------------------------------------------------------------------------------

const sha256 = (data) => createHash('sha256').update(data).digest('hex');
const hmac = (key, data) => createHmac('sha256', key).update(data).digest();

/** RFC 3986 encoding, as SigV4 canonicalises query parameters. */
function encode(value) {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

function safeDecode(value) {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

class S3Failure extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** `20261127T101500Z` -> Date, or null. */
function amzDate(value) {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value ?? '');
  return m ? new Date(Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6])) : null;
}

/**
 * Verifies a request's SigV4 signature with the one key pair; throws an S3Failure saying why not.
 * `rawUrl` is the request target as sent (path still encoded, as the client signed it).
 */
export function verifySignature(req, rawUrl, keys, now = Date.now()) {
  const queryStart = rawUrl.indexOf('?');
  const path = queryStart === -1 ? rawUrl : rawUrl.slice(0, queryStart);
  const pairs = (queryStart === -1 ? '' : rawUrl.slice(queryStart + 1))
    .split('&')
    .filter(Boolean)
    .map((part) => {
      const eq = part.indexOf('=');
      return eq === -1 ? [safeDecode(part), ''] : [safeDecode(part.slice(0, eq)), safeDecode(part.slice(eq + 1))];
    });
  const query = new Map(pairs);
  const header = req.headers.authorization;
  const presigned = query.has('X-Amz-Algorithm');
  if (!header && !presigned) throw new S3Failure(403, 'AccessDenied', 'Access Denied: requests must be signed (AWS Signature Version 4)');
  if (header && presigned) throw new S3Failure(400, 'InvalidArgument', 'Only one auth mechanism allowed');

  let credential;
  let signedHeaders;
  let signature;
  let date;
  let payloadHash;
  if (header) {
    const m = /^AWS4-HMAC-SHA256 (.+)$/.exec(header);
    if (!m) throw new S3Failure(400, 'InvalidArgument', 'Unsupported Authorization Type: only AWS4-HMAC-SHA256');
    const parts = new Map(
      m[1].split(',').map((p) => {
        const t = p.trim();
        return [t.slice(0, t.indexOf('=')), t.slice(t.indexOf('=') + 1)];
      }),
    );
    credential = parts.get('Credential');
    signedHeaders = parts.get('SignedHeaders');
    signature = parts.get('Signature');
    date = req.headers['x-amz-date'];
    payloadHash = req.headers['x-amz-content-sha256'];
    if (!payloadHash) throw new S3Failure(400, 'InvalidRequest', 'Missing required header for this request: x-amz-content-sha256');
    if (payloadHash.startsWith('STREAMING-'))
      throw new S3Failure(501, 'NotImplemented', 'aws-chunked request bodies are not supported by this stand-in');
    const at = amzDate(date);
    if (!at) throw new S3Failure(403, 'AccessDenied', 'AWS authentication requires a valid x-amz-date header');
    if (Math.abs(now - at.getTime()) > MAX_SKEW_MS)
      throw new S3Failure(403, 'RequestTimeTooSkewed', 'The difference between the request time and the current time is too large.');
  } else {
    if (query.get('X-Amz-Algorithm') !== 'AWS4-HMAC-SHA256')
      throw new S3Failure(400, 'AuthorizationQueryParametersError', 'X-Amz-Algorithm only supports "AWS4-HMAC-SHA256"');
    credential = query.get('X-Amz-Credential');
    signedHeaders = query.get('X-Amz-SignedHeaders');
    signature = query.get('X-Amz-Signature');
    date = query.get('X-Amz-Date');
    payloadHash = 'UNSIGNED-PAYLOAD';
    const at = amzDate(date);
    const expires = Number(query.get('X-Amz-Expires'));
    if (!at || !Number.isInteger(expires) || expires < 1 || expires > MAX_PRESIGNED_SECONDS)
      throw new S3Failure(400, 'AuthorizationQueryParametersError', 'X-Amz-Date and X-Amz-Expires (1 to 604800 seconds) are required');
    if (now > at.getTime() + expires * 1000) throw new S3Failure(403, 'AccessDenied', 'Request has expired');
    if (at.getTime() - now > MAX_SKEW_MS) throw new S3Failure(403, 'AccessDenied', 'Request is not valid yet');
  }
  if (!credential || !signedHeaders || !signature)
    throw new S3Failure(400, 'AuthorizationHeaderMalformed', 'Credential, SignedHeaders and Signature are all required');
  const [accessKeyId, day, region, service, terminator, ...extra] = credential.split('/');
  if (accessKeyId !== keys.accessKeyId)
    throw new S3Failure(403, 'InvalidAccessKeyId', 'The AWS Access Key Id you provided does not exist in our records.');
  if (extra.length > 0 || service !== 's3' || terminator !== 'aws4_request' || day !== date.slice(0, 8))
    throw new S3Failure(400, 'AuthorizationHeaderMalformed', 'The credential scope is malformed');
  if (region !== keys.region)
    throw new S3Failure(400, 'AuthorizationHeaderMalformed', `the region '${region}' is wrong; expecting '${keys.region}'`);

  const names = signedHeaders.split(';');
  if (!names.includes('host')) throw new S3Failure(400, 'AuthorizationHeaderMalformed', 'the host header must be signed');
  const canonicalHeaders = names
    .map((name) => {
      const value = req.headers[name];
      const text = Array.isArray(value) ? value.join(',') : (value ?? '');
      return `${name}:${String(text).trim().replace(/\s+/g, ' ')}\n`;
    })
    .join('');
  const canonicalQuery = pairs
    .filter(([key]) => !(presigned && key === 'X-Amz-Signature'))
    .map(([key, value]) => [encode(key), encode(value)])
    .sort(([ak, av], [bk, bv]) => (ak < bk ? -1 : ak > bk ? 1 : av < bv ? -1 : av > bv ? 1 : 0))
    .map(([key, value]) => `${key}=${value}`)
    .join('&');
  const canonicalRequest = [req.method, path, canonicalQuery, canonicalHeaders, signedHeaders, payloadHash].join('\n');
  const scope = `${day}/${region}/s3/aws4_request`;
  const stringToSign = ['AWS4-HMAC-SHA256', date, scope, sha256(canonicalRequest)].join('\n');
  const signingKey = hmac(hmac(hmac(hmac(`AWS4${keys.secretAccessKey}`, day), region), 's3'), 'aws4_request');
  const expected = Buffer.from(createHmac('sha256', signingKey).update(stringToSign).digest('hex'));
  const given = Buffer.from(signature);
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    throw new S3Failure(
      403,
      'SignatureDoesNotMatch',
      'The request signature we calculated does not match the signature you provided. Check your key and signing method.',
    );
}

// --- the server ------------------------------------------------------------------------------------

function xmlEscape(text) {
  return text.replace(/[<>&'"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', "'": '&apos;', '"': '&quot;' })[c]);
}

/**
 * Starts the front door and s3rver behind it. Resolves with `{ port, host, close() }` once listening.
 * `log(line)` gets one line per request (method, path without its query, status): never a key.
 */
export async function startServer({
  port = 7070,
  host = '0.0.0.0',
  dir,
  accessKeyId,
  secretAccessKey,
  region = 'us-east-1',
  health = '',
  log = () => {},
}) {
  mkdirSync(dir, { recursive: true });
  // s3rver's own account registry: the dummy pair goes, ours is the only one it knows.
  AWSAccount.DUMMY_ACCOUNT.revokeAccessKey('S3RVER');
  AWSAccount.DUMMY_ACCOUNT.createKeyPair(accessKeyId, secretAccessKey);
  const s3 = new S3rver({ directory: dir, silent: true, allowMismatchedSignatures: false, vhostBuckets: false });
  const handle = s3.callback();
  const keys = { accessKeyId, secretAccessKey, region };
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    res.on('finish', () => log(`${req.method} ${path} ${res.statusCode}`));
    if (health && req.method === 'GET' && path === health) {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('OK');
      return;
    }
    try {
      verifySignature(req, req.url ?? '/', keys);
    } catch (error) {
      if (!(error instanceof S3Failure)) throw error;
      const body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${error.code}</Code><Message>${xmlEscape(error.message)}</Message><Resource>${xmlEscape(path)}</Resource></Error>`;
      res.writeHead(error.status, { 'content-type': 'application/xml', 'content-length': Buffer.byteLength(body) });
      res.end(req.method === 'HEAD' ? undefined : body);
      req.resume();
      return;
    }
    handle(req, res);
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  return {
    port: server.address().port,
    host,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function main() {
  let options;
  try {
    options = parseArgs(process.argv.slice(2), process.env);
  } catch (error) {
    process.stderr.write(`versitygw stand-in: ${error.message}\n`);
    process.exit(1);
  }
  const log = options.quiet ? () => {} : (line) => process.stdout.write(`${new Date().toISOString()} ${line}\n`);
  const server = await startServer({
    port: options.port,
    host: options.host,
    dir: options.dir,
    accessKeyId: options.access,
    secretAccessKey: options.secret,
    region: options.region,
    health: options.health,
    log,
  });
  process.stdout.write(`versitygw stand-in (s3rver) serving ${options.dir} on ${options.host}:${server.port}, region ${options.region}\n`);
  const stop = async () => {
    process.stdout.write('terminating signal caught, shutting down\n');
    await server.close();
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main();
