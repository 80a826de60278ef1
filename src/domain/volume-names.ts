/** A volume's name: a DNS-label-like word, part of the Docker volume's name (`<prefix>-<service>-vol-<name>`). */
export const VOLUME_NAME = /^[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?$/;

/** The Docker volume of a service's named volume: named with the platform's prefix and the service, so a stranger's volumes are never touched. */
export function dockerVolumeName(prefix: string, serviceId: string, name: string): string {
  return `${prefix}-${serviceId}-vol-${name}`;
}
