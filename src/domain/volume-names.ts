/** The Docker volume of a service's named volume: named with the platform's prefix and the service, so a stranger's volumes are never touched. */
export function dockerVolumeName(prefix: string, serviceId: string, name: string): string {
  return `${prefix}-${serviceId}-vol-${name}`;
}
