/** A certificate and its private key, both PEM. */
export interface KeyPair {
  certPem: string;
  keyPem: string;
}

export interface ServerCertificateRequest {
  /** The subject's common name: the first of the names. */
  commonName: string;
  dnsNames: string[];
  ipAddresses: string[];
  /** How long it is valid, in days. */
  days: number;
}

/**
 * A certificate for a key the requester made and kept (a node's engine: its key never leaves the
 * node). Only the request's public key and signature are used: the names, the usage and the validity
 * are the caller's.
 */
export interface SigningRequest {
  /** PKCS#10, PEM. */
  csrPem: string;
  commonName: string;
  dnsNames: string[];
  ipAddresses: string[];
  days: number;
  /** `server`: extendedKeyUsage serverAuth only; `client`: clientAuth only. */
  usage: 'server' | 'client';
}

/** Makes X.509 certificates: a CA, and server certificates it signs. Implemented over the `openssl` binary. */
export interface CertificateIssuer {
  createAuthority(commonName: string, days: number, signal?: AbortSignal): Promise<KeyPair>;
  issueServer(authority: KeyPair, request: ServerCertificateRequest, signal?: AbortSignal): Promise<KeyPair>;
  /** A key and a client-auth-only certificate (the platform's, for the nodes' engines). */
  issueClient(authority: KeyPair, commonName: string, days: number, signal?: AbortSignal): Promise<KeyPair>;
  /** Signs a request after checking its signature; rejects a malformed or forged one. */
  signRequest(authority: KeyPair, request: SigningRequest, signal?: AbortSignal): Promise<string>;
}
