import type { BackupSource } from '../backups/backup-sources.js';
import { BackupFailure } from '../backups/backup-sources.js';
import { TarStats } from '../backups/tar-stats.js';
import type { VolumeArchive } from '../backups/volume-archive.port.js';
import type { ServiceDeps } from '../platform/deps.js';
import { dockerVolumeName } from '../domain/volume-names.js';
import { quiesce, type Quiesced } from './volume-quiesce.js';
import type { VolumeRuntime } from './volume-runtime.port.js';

/**
 * The `volume` kind of backup: a tar of a service's named volume through the volume archive, with the
 * service stopped for the snapshot (`stopped`: consistent, the downtime in the log) or running (`live`).
 * The tar is counted as it passes: its files and bytes are what a drill's scratch volume must hold.
 */
export function volumeSource(deps: ServiceDeps, archive: VolumeArchive | null, runtime: VolumeRuntime | null): BackupSource {
  return {
    async open({ backup, service, signal, log }) {
      if (!archive) throw new BackupFailure('This platform has no container engine to read volumes with');
      const name = backup.volume;
      if (!name || !(await deps.store.volumes.get(service.id, name)))
        throw new BackupFailure(`Service ${service.name} has no volume ${name ?? ''}`);
      const volume = dockerVolumeName(deps.config.resourcePrefix, service.id, name);
      let held: Quiesced | null = null;
      if (backup.volumeMode === 'stopped') {
        if (!runtime) throw new BackupFailure('This platform has no container engine to stop the service with');
        held = await quiesce(deps, runtime, service);
        log.write(`Service stopped for the snapshot (${held.stopped} container${held.stopped === 1 ? '' : 's'})`);
      } else {
        log.write('Live snapshot: the service keeps running; files written meanwhile may be caught half-written');
      }
      const release = async () => {
        if (!held) return;
        const downMs = await held.resume();
        held = null;
        log.write(`Service started again: ${(downMs / 1000).toFixed(1)} s of downtime for the snapshot`);
      };
      try {
        const running = await archive.archive(volume, { live: backup.volumeMode === 'live' }, signal, (line) => log.write(line, 'stderr'));
        const stats = new TarStats();
        running.stream.on('error', (error) => stats.destroy(error));
        const done = running.done.then(async () => {
          // The tar is read whole: a stopped service runs again before the bytes finish storing.
          await release();
        });
        return {
          stream: running.stream.pipe(stats),
          done,
          finish: async () => ({
            counts: {
              unit: 'files' as const,
              expected: {
                files: { min: stats.stats.files, max: stats.stats.files },
                bytes: { min: stats.stats.bytes, max: stats.stats.bytes },
              },
            },
          }),
          release,
        };
      } catch (error) {
        await release();
        throw error;
      }
    },
  };
}
