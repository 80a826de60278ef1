import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { CertificateIssuer, KeyPair, ServerCertificateRequest, SigningRequest } from '../../src/tls/certificate-issuer.port.js';

const run = promisify(execFile);
const TIMEOUT_MS = 30_000;

/**
 * Certificates with the `openssl` binary (OpenSSL 3, on every Debian), always through argv. Keys
 * are ECDSA P-256. Keys only touch disk in a private temporary directory (0700) that is removed
 * when the call ends; the caller encrypts what it keeps.
 */
export class OpensslCertificateIssuer implements CertificateIssuer {
  constructor(private readonly binary = 'openssl') {}

  async createAuthority(commonName: string, days: number, signal?: AbortSignal): Promise<KeyPair> {
    return this.inScratch(async (dir) => {
      await this.openssl(
        [
          'req',
          '-x509',
          '-new',
          '-newkey',
          'ec',
          '-pkeyopt',
          'ec_paramgen_curve:prime256v1',
          '-nodes',
          '-keyout',
          path.join(dir, 'ca.key'),
          '-out',
          path.join(dir, 'ca.crt'),
          '-days',
          String(days),
          '-subj',
          subject(commonName),
          '-addext',
          'basicConstraints=critical,CA:TRUE,pathlen:0',
          '-addext',
          'keyUsage=critical,keyCertSign,cRLSign',
        ],
        signal,
      );
      return { certPem: await readFile(path.join(dir, 'ca.crt'), 'utf8'), keyPem: await readFile(path.join(dir, 'ca.key'), 'utf8') };
    });
  }

  async issueServer(authority: KeyPair, request: ServerCertificateRequest, signal?: AbortSignal): Promise<KeyPair> {
    checkNames(request.dnsNames, request.ipAddresses);
    return this.inScratch(async (dir) => {
      const keyFile = await this.newKeyAndRequest(dir, request.commonName, signal);
      const certPem = await this.sign(dir, authority, { ...request, usage: 'server' }, signal);
      return { certPem, keyPem: await readFile(keyFile, 'utf8') };
    });
  }

  async issueClient(authority: KeyPair, commonName: string, days: number, signal?: AbortSignal): Promise<KeyPair> {
    return this.inScratch(async (dir) => {
      const keyFile = await this.newKeyAndRequest(dir, commonName, signal);
      const certPem = await this.sign(dir, authority, { commonName, dnsNames: [], ipAddresses: [], days, usage: 'client' }, signal);
      return { certPem, keyPem: await readFile(keyFile, 'utf8') };
    });
  }

  async signRequest(authority: KeyPair, request: SigningRequest, signal?: AbortSignal): Promise<string> {
    checkNames(request.dnsNames, request.ipAddresses);
    if (!/^-----BEGIN CERTIFICATE REQUEST-----\n[A-Za-z0-9+/=\n]+-----END CERTIFICATE REQUEST-----\n?$/.test(request.csrPem))
      throw new Error('not a PEM certificate request');
    return this.inScratch(async (dir) => {
      await writeFile(path.join(dir, 'request.csr'), request.csrPem, { mode: 0o600 });
      // The request's own signature: it proves the requester holds the key it asks a certificate for.
      await this.openssl(['req', '-in', path.join(dir, 'request.csr'), '-verify', '-noout'], signal);
      return this.sign(dir, authority, request, signal);
    });
  }

  /** A fresh P-256 key and a request for it in `dir`; answers the key's path. */
  private async newKeyAndRequest(dir: string, commonName: string, signal?: AbortSignal): Promise<string> {
    const keyFile = path.join(dir, 'new.key');
    await this.openssl(
      [
        'req',
        '-new',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-keyout',
        keyFile,
        '-out',
        path.join(dir, 'request.csr'),
        '-subj',
        subject(commonName),
      ],
      signal,
    );
    return keyFile;
  }

  /**
   * Signs `dir`/request.csr with the CA: the subject is set to the common name asked for, the names
   * and the usage are ours (nothing of the request's extensions is copied).
   */
  private async sign(dir: string, authority: KeyPair, request: Omit<SigningRequest, 'csrPem'>, signal?: AbortSignal): Promise<string> {
    const file = (name: string) => path.join(dir, name);
    await writeFile(file('ca.crt'), authority.certPem, { mode: 0o600 });
    await writeFile(file('ca.key'), authority.keyPem, { mode: 0o600 });
    const names = [...request.dnsNames.map((n) => `DNS:${n}`), ...request.ipAddresses.map((ip) => `IP:${ip}`)];
    await writeFile(
      file('ext.cnf'),
      [
        ...(names.length > 0 ? [`subjectAltName=${names.join(',')}`] : []),
        'basicConstraints=critical,CA:FALSE',
        request.usage === 'server' ? 'keyUsage=critical,digitalSignature,keyEncipherment' : 'keyUsage=critical,digitalSignature',
        `extendedKeyUsage=${request.usage === 'server' ? 'serverAuth' : 'clientAuth'}`,
        '',
      ].join('\n'),
    );
    await this.openssl(
      [
        'x509',
        '-req',
        '-in',
        file('request.csr'),
        '-CA',
        file('ca.crt'),
        '-CAkey',
        file('ca.key'),
        '-set_serial',
        `0x${randomBytes(16).toString('hex')}`,
        '-days',
        String(request.days),
        '-sha256',
        '-subj',
        subject(request.commonName),
        '-extfile',
        file('ext.cnf'),
        '-out',
        file('signed.crt'),
      ],
      signal,
    );
    return readFile(file('signed.crt'), 'utf8');
  }

  private async openssl(args: string[], signal?: AbortSignal): Promise<void> {
    try {
      await run(this.binary, args, { timeout: TIMEOUT_MS, ...(signal ? { signal } : {}) });
    } catch (error) {
      const stderr = String((error as { stderr?: unknown }).stderr ?? '')
        .trim()
        .split('\n')
        .at(-1);
      throw new Error(`openssl ${args[0]} failed: ${stderr || (error as Error).message}`);
    }
  }

  private async inScratch<T>(work: (dir: string) => Promise<T>): Promise<T> {
    const dir = await mkdtemp(path.join(tmpdir(), 'slipway-tls-'));
    try {
      return await work(dir);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
}

/** `/CN=...` with the characters openssl's -subj treats specially escaped. */
function subject(commonName: string): string {
  return `/CN=${commonName.replace(/[\\/+=,]/g, (c) => `\\${c}`).slice(0, 64)}`;
}

function checkNames(dnsNames: string[], ipAddresses: string[]): void {
  for (const name of dnsNames)
    if (!/^[A-Za-z0-9*]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$/.test(name))
      throw new Error(`not a DNS name: ${JSON.stringify(name)}`);
  for (const ip of ipAddresses) if (!/^[0-9a-fA-F.:]+$/.test(ip)) throw new Error(`not an IP address: ${JSON.stringify(ip)}`);
}
