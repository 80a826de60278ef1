import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';

/**
 * Local stand-ins for the Cloudflare, DigitalOcean and Hetzner DNS APIs: node:http on 127.0.0.1, zones and
 * records in memory, each vendor's auth header, paths, bodies and error shapes. Every request is recorded.
 */

export interface RecordedDnsRequest {
  method: string;
  /** Full path without the query, including the vendor's prefix, e.g. `/client/v4/zones`. */
  path: string;
  query: Record<string, string>;
  headers: IncomingHttpHeaders;
  /** Parsed JSON body, undefined for none. */
  body: unknown;
}

interface Reply {
  status: number;
  body: unknown;
}

type Route = (method: string, path: string, query: Record<string, string>, body: unknown) => Reply;

abstract class DnsStandin {
  readonly requests: RecordedDnsRequest[] = [];
  private server: Server | undefined;
  private port = 0;
  private failures: Array<number | 'hang'> = [];

  constructor(
    /** The token the stand-in accepts. */
    public token: string,
    /** The vendor's path prefix, e.g. `/client/v4`. */
    private readonly prefix: string,
  ) {}

  /** The base URL to hand the adapter, prefix included. */
  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}${this.prefix}`;
  }

  /** Requests that change something (anything but GET). */
  get writes(): RecordedDnsRequest[] {
    return this.requests.filter((r) => r.method !== 'GET');
  }

  /** The next request is answered with this status and the vendor's error body for it. */
  failNext(status: number): void {
    this.failures.push(status);
  }

  /** The next request is never answered (until the client gives up or the stand-in closes). */
  hangNext(): void {
    this.failures.push('hang');
  }

  reset(): void {
    this.requests.length = 0;
    this.failures = [];
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  protected abstract authorized(headers: IncomingHttpHeaders): boolean;
  protected abstract unauthorizedBody(): unknown;
  protected abstract errorBody(status: number): unknown;
  protected abstract route: Route;

  protected static newId(): string {
    return randomBytes(16).toString('hex');
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const url = new URL(req.url ?? '/', 'http://standin');
    let body: unknown;
    if (raw) {
      try {
        body = JSON.parse(raw);
      } catch {
        body = raw;
      }
    }
    const method = req.method ?? 'GET';
    this.requests.push({ method, path: url.pathname, query: Object.fromEntries(url.searchParams), headers: req.headers, body });

    const failure = this.failures.shift();
    if (failure === 'hang') return; // leave the response open
    let reply: Reply;
    if (failure !== undefined) reply = { status: failure, body: this.errorBody(failure) };
    else if (!this.authorized(req.headers)) reply = { status: 401, body: this.unauthorizedBody() };
    else if (!url.pathname.startsWith(`${this.prefix}/`)) reply = { status: 404, body: this.errorBody(404) };
    else if (raw && typeof body === 'string') reply = { status: 400, body: this.errorBody(400) };
    else reply = this.route(method, url.pathname.slice(this.prefix.length), Object.fromEntries(url.searchParams), body);

    res.writeHead(reply.status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(reply.body));
  }
}

function bearer(headers: IncomingHttpHeaders, token: string): boolean {
  return headers.authorization === `Bearer ${token}`;
}

function str(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0;
}

function obj(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
}

// ---------------------------------------------------------------- Cloudflare API v4

export interface CloudflareRecord {
  id: string;
  zone_id: string;
  zone_name: string;
  /** Fully qualified. */
  name: string;
  type: string;
  content: string;
  ttl: number;
  proxied: boolean;
}

export class CloudflareStandin extends DnsStandin {
  readonly zones: Array<{ id: string; name: string }> = [];
  readonly records: CloudflareRecord[] = [];

  constructor(token = 'cf-token-123456') {
    super(token, '/client/v4');
  }

  addZone(name: string): string {
    const id = DnsStandin.newId();
    this.zones.push({ id, name });
    return id;
  }

  /** `name` is fully qualified. */
  addRecord(zoneName: string, name: string, content: string, type = 'A'): CloudflareRecord {
    const zone = this.zones.find((z) => z.name === zoneName);
    if (!zone) throw new Error(`no zone ${zoneName}`);
    const record = { id: DnsStandin.newId(), zone_id: zone.id, zone_name: zone.name, name, type, content, ttl: 1, proxied: false };
    this.records.push(record);
    return record;
  }

  protected authorized(headers: IncomingHttpHeaders): boolean {
    return bearer(headers, this.token);
  }

  private envelope(errors: Array<{ code: number; message: string }>): unknown {
    return { success: false, errors, messages: [], result: null };
  }

  protected unauthorizedBody(): unknown {
    return this.envelope([{ code: 10000, message: 'Authentication error' }]);
  }

  protected errorBody(status: number): unknown {
    if (status === 429) return this.envelope([{ code: 971, message: 'Please wait and consider throttling your request speed' }]);
    if (status === 404) return this.envelope([{ code: 7003, message: 'Could not route to the requested resource' }]);
    if (status === 400) return this.envelope([{ code: 6007, message: 'Malformed JSON in request body' }]);
    return this.envelope([{ code: 10000 + status, message: 'Internal Server Error' }]);
  }

  private ok(result: unknown, resultInfo?: unknown): Reply {
    return { status: 200, body: { success: true, errors: [], messages: [], result, ...(resultInfo ? { result_info: resultInfo } : {}) } };
  }

  protected route: Route = (method, path, query, body) => {
    if (method === 'GET' && path === '/zones') {
      const perPage = Number(query.per_page ?? 20);
      const page = Number(query.page ?? 1);
      const slice = this.zones.slice((page - 1) * perPage, page * perPage).map((z) => ({ ...z, status: 'active' }));
      return this.ok(slice, {
        page,
        per_page: perPage,
        count: slice.length,
        total_count: this.zones.length,
        total_pages: Math.max(1, Math.ceil(this.zones.length / perPage)),
      });
    }
    const m = /^\/zones\/([^/]+)\/dns_records(?:\/([^/]+))?$/.exec(path);
    const zone = m && this.zones.find((z) => z.id === m[1]);
    if (!m || !zone) return { status: 404, body: this.errorBody(404) };
    const recordId = m[2];
    if (method === 'GET' && !recordId) {
      const found = this.records.filter(
        (r) => r.zone_id === zone.id && (!query.type || r.type === query.type) && (!query.name || r.name === query.name),
      );
      return this.ok(found, { page: 1, per_page: 100, count: found.length, total_count: found.length, total_pages: 1 });
    }
    const b = obj(body);
    if (method === 'POST' && !recordId) {
      if (!str(b.type) || !str(b.name) || !str(b.content)) {
        return { status: 400, body: this.envelope([{ code: 9005, message: 'Content for A record is invalid.' }]) };
      }
      const record: CloudflareRecord = {
        id: DnsStandin.newId(),
        zone_id: zone.id,
        zone_name: zone.name,
        name: b.name,
        type: b.type,
        content: b.content,
        ttl: typeof b.ttl === 'number' ? b.ttl : 1,
        proxied: b.proxied === true,
      };
      this.records.push(record);
      return this.ok(record);
    }
    const record = recordId ? this.records.find((r) => r.id === recordId && r.zone_id === zone.id) : undefined;
    if (method === 'PATCH' && record) {
      if (b.content !== undefined) record.content = String(b.content);
      return this.ok(record);
    }
    if (recordId && !record) return { status: 404, body: this.envelope([{ code: 81044, message: 'Record does not exist.' }]) };
    return { status: 405, body: this.envelope([{ code: 10405, message: 'Method not allowed' }]) };
  };
}

// ---------------------------------------------------------------- DigitalOcean API v2

export interface DigitalOceanRecord {
  id: number;
  type: string;
  /** Relative to the domain, `@` for the apex. */
  name: string;
  data: string;
  ttl: number;
  priority: null;
  port: null;
  weight: null;
  flags: null;
  tag: null;
}

export class DigitalOceanStandin extends DnsStandin {
  readonly domains: string[] = [];
  readonly records = new Map<string, DigitalOceanRecord[]>();
  private nextId = 1000;

  constructor(token = 'dop_v1_standin-token') {
    super(token, '/v2');
  }

  addZone(name: string): void {
    this.domains.push(name);
    this.records.set(name, []);
  }

  /** `name` is the label (`@` for the apex). */
  addRecord(domain: string, name: string, data: string, type = 'A'): DigitalOceanRecord {
    const list = this.records.get(domain);
    if (!list) throw new Error(`no domain ${domain}`);
    const record = this.newRecord(type, name, data, 1800);
    list.push(record);
    return record;
  }

  private newRecord(type: string, name: string, data: string, ttl: number): DigitalOceanRecord {
    return { id: this.nextId++, type, name, data, ttl, priority: null, port: null, weight: null, flags: null, tag: null };
  }

  protected authorized(headers: IncomingHttpHeaders): boolean {
    return bearer(headers, this.token);
  }

  protected unauthorizedBody(): unknown {
    return { id: 'unauthorized', message: 'Unable to authenticate you' };
  }

  protected errorBody(status: number): unknown {
    if (status === 429) return { id: 'too_many_requests', message: 'API Rate limit exceeded.' };
    if (status === 404) return { id: 'not_found', message: 'The resource you were accessing could not be found.' };
    if (status === 400) return { id: 'bad_request', message: 'There was an error parsing the request body.' };
    return { id: 'server_error', message: 'Server was unable to give you a response.' };
  }

  protected route: Route = (method, path, query, body) => {
    if (method === 'GET' && path === '/domains') {
      const perPage = Number(query.per_page ?? 20);
      const page = Number(query.page ?? 1);
      const last = Math.max(1, Math.ceil(this.domains.length / perPage));
      const pageUrl = (n: number) => `${this.baseUrl}/domains?page=${n}&per_page=${perPage}`;
      const pages: Record<string, string> = {};
      if (page > 1) Object.assign(pages, { first: pageUrl(1), prev: pageUrl(page - 1) });
      if (page < last) Object.assign(pages, { next: pageUrl(page + 1), last: pageUrl(last) });
      const slice = this.domains.slice((page - 1) * perPage, page * perPage).map((name) => ({ name, ttl: 1800, zone_file: '' }));
      return {
        status: 200,
        body: { domains: slice, links: Object.keys(pages).length ? { pages } : {}, meta: { total: this.domains.length } },
      };
    }
    const m = /^\/domains\/([^/]+)\/records(?:\/([^/]+))?$/.exec(path);
    const domain = m ? decodeURIComponent(m[1]!) : undefined;
    const list = domain ? this.records.get(domain) : undefined;
    if (!m || !domain || !list) return { status: 404, body: this.errorBody(404) };
    const recordId = m[2];
    const b = obj(body);
    if (method === 'GET' && !recordId) {
      // `name` filters by the fully qualified name; records carry the label.
      const fqdn = (r: DigitalOceanRecord) => (r.name === '@' ? domain : `${r.name}.${domain}`);
      const found = list.filter((r) => (!query.type || r.type === query.type) && (!query.name || fqdn(r) === query.name));
      return { status: 200, body: { domain_records: found, links: {}, meta: { total: found.length } } };
    }
    if (method === 'POST' && !recordId) {
      if (!str(b.type) || !str(b.name) || !str(b.data)) {
        return { status: 422, body: { id: 'unprocessable_entity', message: 'Name, type and data are required.' } };
      }
      const record = this.newRecord(b.type, b.name, b.data, typeof b.ttl === 'number' ? b.ttl : 1800);
      list.push(record);
      return { status: 201, body: { domain_record: record } };
    }
    const record = recordId ? list.find((r) => String(r.id) === recordId) : undefined;
    if (method === 'PUT' && record) {
      if (!str(b.type)) return { status: 422, body: { id: 'unprocessable_entity', message: 'Type is required.' } };
      if (b.data !== undefined) record.data = String(b.data);
      if (str(b.name)) record.name = b.name;
      return { status: 200, body: { domain_record: record } };
    }
    if (recordId && !record) return { status: 404, body: this.errorBody(404) };
    return { status: 405, body: { id: 'method_not_allowed', message: 'Method not allowed' } };
  };
}

// ---------------------------------------------------------------- Hetzner DNS API v1

export interface HetznerRecord {
  id: string;
  zone_id: string;
  type: string;
  /** Relative to the zone, `@` for the apex. */
  name: string;
  value: string;
  ttl: number;
  created: string;
  modified: string;
}

export class HetznerStandin extends DnsStandin {
  readonly zones: Array<{ id: string; name: string }> = [];
  readonly records: HetznerRecord[] = [];

  constructor(token = 'hetzner-standin-token') {
    super(token, '/api/v1');
  }

  addZone(name: string): string {
    const id = DnsStandin.newId().slice(0, 22);
    this.zones.push({ id, name });
    return id;
  }

  addRecord(zoneName: string, name: string, value: string, type = 'A', ttl = 3600): HetznerRecord {
    const zone = this.zones.find((z) => z.name === zoneName);
    if (!zone) throw new Error(`no zone ${zoneName}`);
    const now = new Date().toISOString();
    const record = { id: DnsStandin.newId(), zone_id: zone.id, type, name, value, ttl, created: now, modified: now };
    this.records.push(record);
    return record;
  }

  protected authorized(headers: IncomingHttpHeaders): boolean {
    return headers['auth-api-token'] === this.token;
  }

  protected unauthorizedBody(): unknown {
    return { message: 'Invalid authentication credentials' };
  }

  protected errorBody(status: number): unknown {
    const message =
      status === 429 ? 'rate limit exceeded' : status === 404 ? 'not found' : status === 400 ? 'invalid JSON' : 'internal server error';
    return { error: { message, code: status } };
  }

  private static pagination(page: number, perPage: number, total: number) {
    const last = Math.max(1, Math.ceil(total / perPage));
    return {
      pagination: {
        page,
        per_page: perPage,
        previous_page: Math.max(1, page - 1),
        next_page: Math.min(last, page + 1),
        last_page: last,
        total_entries: total,
      },
    };
  }

  protected route: Route = (method, path, query, body) => {
    const perPage = Number(query.per_page ?? 100);
    const page = Number(query.page ?? 1);
    if (method === 'GET' && path === '/zones') {
      const slice = this.zones.slice((page - 1) * perPage, page * perPage).map((z) => ({ ...z, ttl: 86400, status: 'verified' }));
      return { status: 200, body: { zones: slice, meta: HetznerStandin.pagination(page, perPage, this.zones.length) } };
    }
    if (method === 'GET' && path === '/records') {
      if (!this.zones.some((z) => z.id === query.zone_id))
        return { status: 404, body: { records: null, error: { message: 'zone not found', code: 404 } } };
      const all = this.records.filter((r) => r.zone_id === query.zone_id);
      return {
        status: 200,
        body: { records: all.slice((page - 1) * perPage, page * perPage), meta: HetznerStandin.pagination(page, perPage, all.length) },
      };
    }
    const b = obj(body);
    const invalid = (message: string): Reply => ({ status: 422, body: { record: {}, error: { message, code: 422 } } });
    const complete = str(b.zone_id) && str(b.type) && str(b.name) && str(b.value);
    if (method === 'POST' && path === '/records') {
      if (!complete) return invalid('zone_id, type, name and value are required');
      const zone = this.zones.find((z) => z.id === b.zone_id);
      if (!zone) return invalid('zone not found');
      const record = this.addRecord(zone.name, String(b.name), String(b.value), String(b.type), typeof b.ttl === 'number' ? b.ttl : 3600);
      return { status: 200, body: { record } };
    }
    const m = /^\/records\/([^/]+)$/.exec(path);
    if (method === 'PUT' && m) {
      const record = this.records.find((r) => r.id === m[1]);
      if (!record) return { status: 404, body: { record: {}, error: { message: 'record not found', code: 404 } } };
      if (!complete) return invalid('zone_id, type, name and value are required');
      Object.assign(record, {
        zone_id: String(b.zone_id),
        type: String(b.type),
        name: String(b.name),
        value: String(b.value),
        ttl: typeof b.ttl === 'number' ? b.ttl : record.ttl,
        modified: new Date().toISOString(),
      });
      return { status: 200, body: { record } };
    }
    return { status: 404, body: this.errorBody(404) };
  };
}
