import { z } from 'zod';
import { ValidationError } from '../domain/errors.js';
import { VOLUME_NAME } from '../domain/volume-names.js';

export { VOLUME_NAME };

/** Named volumes a service may have: each is a Docker volume on the server, so the count is bounded. */
export const MAX_VOLUMES_PER_SERVICE = 10;
/** Mount points the platform or the kernel own inside a container: a volume there would hide them. */
const RESERVED_MOUNTS = ['/', '/proc', '/sys', '/dev', '/etc', '/bin', '/sbin', '/lib', '/usr', '/tmp/slipway'];

export const volumeName = z
  .string()
  .regex(VOLUME_NAME, 'lowercase letters, digits and dashes, 1 to 32, starting and ending with a letter or digit')
  .meta({ description: 'The volume name, unique per service: lowercase letters, digits and dashes, at most 32' });

export const volumeInput = z.strictObject({
  name: volumeName,
  mountPath: z
    .string()
    .max(512)
    .regex(/^\/[^\0]*$/, 'an absolute path')
    .refine((path) => !path.split('/').some((part) => part === '..' || part === '.'), 'no `.` or `..` parts')
    .refine((path) => !RESERVED_MOUNTS.includes(path.replace(/\/+$/, '') || '/'), 'a path the container needs for itself')
    .meta({ description: 'Absolute path inside the container the volume is mounted at' }),
});

/** `volumes: [{name, mountPath}]` on service create and update (update replaces the whole list). */
export const volumesInput = z
  .array(volumeInput)
  .max(MAX_VOLUMES_PER_SERVICE)
  .superRefine((volumes, ctx) => {
    const names = new Set<string>();
    const paths = new Set<string>();
    volumes.forEach((v, i) => {
      if (names.has(v.name)) ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `volume ${v.name} is given twice` });
      const path = v.mountPath.replace(/\/+$/, '');
      if (paths.has(path)) ctx.addIssue({ code: 'custom', path: [i, 'mountPath'], message: `${v.mountPath} is mounted twice` });
      names.add(v.name);
      paths.add(path);
    });
  });
export type VolumeInput = z.output<typeof volumeInput>;

/** A named volume must not take the place of the data directory the platform mounts itself (a database's, a storage instance's). */
export function assertVolumesFit(volumes: VolumeInput[], dataDir: string | null): void {
  if (!dataDir) return;
  const own = dataDir.replace(/\/+$/, '');
  volumes.forEach((v, i) => {
    const path = v.mountPath.replace(/\/+$/, '');
    if (path === own || own.startsWith(`${path}/`) || path.startsWith(`${own}/`))
      throw new ValidationError(`volumes.${i}.mountPath`, `${v.mountPath} overlaps ${dataDir}, where the service keeps its data already`);
  });
}
