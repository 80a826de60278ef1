/*
 * A seeded generator of broken requests from an OpenAPI 3.1 document: each operation's body is
 * generated from its schema and then broken (wrong types, missing and extra fields, huge and
 * deeply nested values, NUL and invalid UTF-8, injection strings), and every path parameter gets
 * real ids, traversal and encoded separators. The same seed gives the same requests.
 */

/** mulberry32: small, fast, and the same sequence for the same seed everywhere. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface Operation {
  method: string;
  path: string;
  params: string[];
  bodySchema: Schema | undefined;
}

export type Schema = {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  enum?: unknown[];
  const?: unknown;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  $ref?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
};

export interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: Buffer | string | undefined;
  label: string;
}

type Doc = {
  paths: Record<string, Record<string, { requestBody?: { content?: Record<string, { schema?: Schema }> } }>>;
  components?: { schemas?: Record<string, Schema> };
};

/** Every operation of the document: new endpoints join the fuzz without a change here. */
export function operationsOf(doc: Doc): Operation[] {
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      const params = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
      ops.push({ method: method.toUpperCase(), path, params, bodySchema: op.requestBody?.content?.['application/json']?.schema });
    }
  }
  return ops;
}

export const INJECTIONS = [
  "' OR '1'='1",
  "'); DROP TABLE projects; --",
  '"; DROP TABLE services; --',
  '${7*7}',
  '{{7*7}}',
  '$(id)',
  '`id`',
  '; rm -rf / #',
  '../../../../etc/passwd',
  '..\\..\\windows\\win.ini',
  '<script>alert(1)</script>',
  '%00',
  '\u0000',
  'a\u0000b',
  '\u202e\u0007\u001b[31m',
  '\ud800',
  '😀'.repeat(50),
  '__proto__',
  'constructor',
  '?',
  '??',
  '\\?',
  '$1',
  'null',
  'true',
  '-1',
  '1e309',
  ' ',
  '',
];

const SEGMENTS = [
  '..',
  '.',
  '%2e%2e',
  '%2E',
  '.%2e',
  '%2f',
  'a%2fb',
  '%5c',
  'a%5Cb',
  '%00',
  'x%00y',
  '%zz',
  '%',
  '..%2f..',
  "'%20OR%201=1",
  '%252e%252e',
  'a'.repeat(300),
  '%ff',
  '%C0%AE%C0%AE',
];

export class Fuzzer {
  private readonly random: () => number;
  constructor(
    seed: number,
    private readonly doc: Doc,
    /** Real values for path parameters by name (projectId, serviceId...). */
    private readonly real: Record<string, string>,
  ) {
    this.random = rng(seed);
  }

  private int(n: number): number {
    return Math.floor(this.random() * n);
  }
  private pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }
  private chance(p: number): boolean {
    return this.random() < p;
  }

  private resolve(schema: Schema | undefined): Schema {
    let s = schema ?? {};
    for (let i = 0; i < 10 && s.$ref; i++) s = this.doc.components?.schemas?.[s.$ref.split('/').pop()!] ?? {};
    return s;
  }

  /** A value that fits the schema (mostly), to be broken afterwards. */
  valid(schema: Schema | undefined, depth = 0): unknown {
    const s = this.resolve(schema);
    if (s.const !== undefined) return s.const;
    if (s.enum) return this.pick(s.enum);
    const alternatives = s.anyOf ?? s.oneOf;
    if (alternatives) return this.valid(this.pick(alternatives), depth);
    if (s.allOf?.[0]) return this.valid(s.allOf[0], depth);
    const type = Array.isArray(s.type) ? this.pick(s.type) : s.type;
    switch (type) {
      case 'object': {
        const out: Record<string, unknown> = {};
        for (const [key, prop] of Object.entries(s.properties ?? {})) {
          if (s.required?.includes(key) || this.chance(0.5)) out[key] = this.valid(prop, depth + 1);
        }
        return out;
      }
      case 'array':
        return depth > 3 ? [] : Array.from({ length: this.int(3) }, () => this.valid(s.items, depth + 1));
      case 'integer':
      case 'number':
        return (s.minimum ?? 0) + this.int(Math.max(1, Math.min((s.maximum ?? 1000) - (s.minimum ?? 0), 1000)));
      case 'boolean':
        return this.chance(0.5);
      case 'null':
        return null;
      default:
        return this.pick([
          'fuzz',
          'web',
          'example.com',
          'acme/web',
          'A_KEY',
          'main',
          'read',
          'write',
          'x.fuzz.test',
          this.real.projectId ?? 'p',
        ]);
    }
  }

  /** Any kind of wrong value. */
  wrong(depth = 0): unknown {
    switch (this.int(12)) {
      case 0:
        return this.pick(INJECTIONS);
      case 1:
        return this.int(2) ? -1 : 1e308;
      case 2:
        return this.chance(0.5);
      case 3:
        return null;
      case 4:
        return [];
      case 5:
        return {};
      case 6:
        return 'x'.repeat(this.pick([256, 4097, 70_000]));
      case 7:
        // Deeper than this as text only (the `deep 4200` body): JSON.stringify recurses too.
        return nested(this.pick([10, 63, 65, 200, 900]));
      case 8:
        return depth > 2 ? 'deep' : { [this.pick(INJECTIONS)]: this.wrong(depth + 1) };
      case 9:
        return Array.from({ length: this.pick([2, 600]) }, () => 'x');
      case 10:
        return this.pick(['\u0000', 'a\u0000b', '\u0001\u0002\u007f', 'tab\there', 'line\nbreak']);
      default:
        return 1.5;
    }
  }

  /** The valid body, broken in one or more ways. */
  body(schema: Schema | undefined): unknown {
    const value = this.valid(schema);
    if (!value || typeof value !== 'object' || Array.isArray(value)) return this.chance(0.5) ? value : this.wrong();
    const obj = value as Record<string, unknown>;
    const keys = Object.keys(this.resolve(schema).properties ?? {});
    const breaks = 1 + this.int(3);
    for (let i = 0; i < breaks; i++) {
      switch (this.int(6)) {
        case 0:
          if (keys.length) obj[this.pick(keys)] = this.wrong();
          break;
        case 1:
          if (keys.length) delete obj[this.pick(keys)];
          break;
        case 2:
          obj[this.pick(['extra', 'admin', '__proto__', 'constructor', 'isAdmin', 'id', 'a\u0000b'])] = this.wrong();
          break;
        case 3:
          if (keys.length) obj[this.pick(keys)] = this.pick(INJECTIONS);
          break;
        case 4:
          // A valid request now and then: reaches the service code with real ids.
          break;
        default:
          return this.wrong();
      }
    }
    return obj;
  }

  private param(name: string): string {
    const real = this.real[name];
    const roll = this.int(10);
    if (real && roll < 5) return real;
    if (roll < 8) return this.pick(SEGMENTS);
    const injection = this.pick(INJECTIONS);
    try {
      return encodeURIComponent(injection);
    } catch {
      return '%ED%A0%80'; // a lone surrogate, as bytes
    }
  }

  /** One broken request for the operation. */
  request(op: Operation): FuzzRequest {
    const path = op.path.replace(/\{(\w+)\}/g, (_, name: string) => this.param(name));
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    let body: Buffer | string | undefined;
    let label = 'json';
    if (op.method !== 'GET') {
      const roll = this.int(20);
      if (roll === 0) {
        body = Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xff, 0xfe, 0xc0, 0x80]), Buffer.from('"}')]);
        label = 'invalid utf-8';
      } else if (roll === 1) {
        body = `{"name":${'['.repeat(4200)}${']'.repeat(4200)}}`;
        label = 'deep 4200';
      } else if (roll === 2) {
        body = '{"name": "unterminated';
        label = 'bad json';
      } else if (roll === 3) {
        body = JSON.stringify(this.valid(op.bodySchema));
        headers['content-type'] = this.pick([
          'text/plain',
          'application/x-www-form-urlencoded',
          'multipart/form-data; boundary=x',
          'application/xml',
        ]);
        label = 'content type';
      } else if (roll === 4) {
        body = JSON.stringify(this.pick([[], 'string', 42, null, true]));
        label = 'not an object';
      } else if (roll === 5) {
        body = 'x'.repeat(1024 * 1024 + 10);
        label = 'too large';
      } else {
        body = JSON.stringify(this.body(op.bodySchema));
      }
    }
    return { method: op.method, path, headers, body, label };
  }
}

function nested(levels: number): unknown {
  let value: unknown = 'bottom';
  for (let i = 0; i < levels; i++) value = i % 2 ? [value] : { a: value };
  return value;
}
