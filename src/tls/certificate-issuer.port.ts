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

/** Makes X.509 certificates: a CA, and server certificates it signs. Implemented over the `openssl` binary. */
export interface CertificateIssuer {
  createAuthority(commonName: string, days: number, signal?: AbortSignal): Promise<KeyPair>;
  issueServer(authority: KeyPair, request: ServerCertificateRequest, signal?: AbortSignal): Promise<KeyPair>;
}
