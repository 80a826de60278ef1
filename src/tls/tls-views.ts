import { z } from 'zod';

/** The spec's TLS info shape. */
export const tlsInfoView = z
  .object({
    active: z.boolean().meta({ description: 'The running server was started with the platform certificate (ssl=on)' }),
    caCertAvailable: z.boolean().meta({ description: 'The platform CA exists: GET tls/ca answers it' }),
    publicHostname: z.string().meta({ description: "The database's public hostname (else the public IP): the certificate names it" }),
    publicPort: z.number().int().meta({ description: 'The host port clients connect to' }),
  })
  .meta({ id: 'DatabaseTlsInfo' });

export const tlsView = z.object({ tls: tlsInfoView });
