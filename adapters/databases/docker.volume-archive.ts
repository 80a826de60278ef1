import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import type Docker from 'dockerode';
import type { RunningDump, VolumeArchive, VolumeStats } from '../../src/index.js';
import { ContainerExec } from './container-exec.js';
import { ScratchDocker } from './scratch-docker.js';

const MOUNT = '/volume';

/** The engine of another server holding a volume (a storage instance's or a database's, on the cluster). */
export interface VolumeHost {
  docker: Docker;
  /** The image onto that engine (sent from the platform's when it lacks it). */
  ensureImage(ref: string, signal: AbortSignal, log: (line: string) => void): Promise<void>;
}

/**
 * Volume tars through a helper container of the helper image (GNU tar and findutils; `debian:bookworm-slim`
 * by default) that mounts the volume and sleeps while each step runs in it with `docker exec` (argv). The
 * helper is on a network of its own and removed when the step ends.
 */
export class DockerVolumeArchive implements VolumeArchive {
  private readonly scratch: ScratchDocker;

  constructor(
    private readonly docker: Docker,
    private readonly instanceId: string,
    private readonly prefix: string,
    private readonly helperImage: () => string,
    /** The server holding a volume when it is not the platform's (PlacedContainerEngine.volumeHost); null: here. */
    private readonly hostOf: (volume: string) => Promise<VolumeHost | null> = async () => null,
  ) {
    this.scratch = new ScratchDocker(docker, instanceId, 'volume');
  }

  /** A helper on `volume` for the duration of `work`; removed however it ends. */
  private async withHelper<T>(
    volume: string,
    options: { readOnly: boolean },
    signal: AbortSignal,
    log: (line: string) => void,
    work: (exec: ContainerExec, done: () => Promise<void>) => Promise<T>,
  ): Promise<T> {
    const name = `${this.prefix}-volume-${randomBytes(6).toString('hex')}`;
    // The helper runs where the volume is: another server's engine for a volume placed there.
    const host = await this.hostOf(volume);
    if (host) await host.ensureImage(this.helperImage(), signal, log);
    const scratch = host ? new ScratchDocker(host.docker, this.instanceId, 'volume') : this.scratch;
    const docker = host?.docker ?? this.docker;
    await scratch.ensureImage(this.helperImage(), signal, log);
    await scratch.network(name, signal);
    let id: string | null = null;
    const done = async () => {
      if (id) await scratch.remove(id).catch(() => undefined);
      await scratch.removeNetwork(name).catch(() => undefined);
    };
    try {
      ({ id } = await scratch.start(
        {
          name,
          image: this.helperImage(),
          entrypoint: ['sleep'],
          cmd: ['infinity'],
          network: name,
          mounts: [{ volume, target: MOUNT, readOnly: options.readOnly }],
          user: '0',
        },
        signal,
      ));
      return await work(new ContainerExec(docker, id, signal, log), done);
    } catch (error) {
      await done();
      throw error;
    }
  }

  async archive(volume: string, options: { live: boolean }, signal: AbortSignal, log: (line: string) => void): Promise<RunningDump> {
    return this.withHelper(volume, { readOnly: true }, signal, log, async (exec, done) => {
      const cmd = ['tar', '-c', '-f', '-', '-C', MOUNT, '--numeric-owner', '--sort=name', '.'];
      log(
        `Running ${cmd.join(' ')} in a helper container (volume ${volume} mounted read-only${options.live ? ', the service running' : ''})`,
      );
      const run = await exec.stream(cmd);
      const ended = run.done.catch((error: Error) => {
        // GNU tar exits 1 when a file changed while it read it: expected of a live snapshot, said in the log.
        if (options.live && /^tar exited with 1:/.test(error.message)) {
          log(`Warning: files changed while they were read (a live snapshot): ${error.message}`);
          return;
        }
        throw error;
      });
      const finished = ended.finally(done);
      finished.catch(() => undefined);
      return { stream: run.stdout, done: finished };
    });
  }

  async restore(volume: string, input: Readable, signal: AbortSignal, log: (line: string) => void): Promise<void> {
    await this.withHelper(volume, { readOnly: false }, signal, log, async (exec, done) => {
      try {
        const staging = `${MOUNT}/.slipway-restore-${randomBytes(4).toString('hex')}`;
        await exec.run(['mkdir', staging]);
        try {
          log(`Extracting into ${staging.slice(MOUNT.length + 1)} of volume ${volume}`);
          await exec.run(['tar', '-x', '-f', '-', '-C', staging, '--numeric-owner'], { stdin: input });
        } catch (error) {
          await exec.run(['rm', '-rf', staging]).catch(() => undefined);
          throw error;
        }
        log('Swapping the extracted files in');
        const base = staging.slice(MOUNT.length + 1);
        await exec.run(['find', MOUNT, '-mindepth', '1', '-maxdepth', '1', '!', '-name', base, '-exec', 'rm', '-rf', '{}', '+']);
        await exec.run(['find', staging, '-mindepth', '1', '-maxdepth', '1', '-exec', 'mv', '-t', MOUNT, '{}', '+']);
        await exec.run(['chown', `--reference=${staging}`, MOUNT]);
        await exec.run(['chmod', `--reference=${staging}`, MOUNT]);
        await exec.run(['rmdir', staging]);
      } finally {
        await done();
      }
    });
  }

  async drill(id: string, input: Readable, signal: AbortSignal, log: (line: string) => void): Promise<VolumeStats> {
    const volume = `${this.prefix}-drill-${id}`;
    try {
      return await this.withHelper(volume, { readOnly: false }, signal, log, async (exec, done) => {
        try {
          log(`Extracting into scratch volume ${volume}`);
          await exec.run(['tar', '-x', '-f', '-', '-C', MOUNT, '--numeric-owner'], { stdin: input });
          const out = await exec.stream(['find', MOUNT, '-type', 'f', '-printf', '%i %s\\n']);
          const inodes = new Map<string, number>();
          let files = 0;
          let rest = '';
          for await (const chunk of out.stdout as AsyncIterable<Buffer>) {
            const lines = (rest + chunk.toString('utf8')).split('\n');
            rest = lines.pop() ?? '';
            for (const line of lines) {
              const [inode, size] = line.split(' ');
              if (!inode) continue;
              files++;
              inodes.set(inode, Number(size));
            }
          }
          await out.done;
          let bytes = 0;
          for (const size of inodes.values()) bytes += size;
          return { files, bytes };
        } finally {
          await done();
        }
      });
    } finally {
      await this.scratch.removeVolume(volume).catch(() => undefined);
    }
  }

  sweep(): Promise<string[]> {
    return this.scratch.sweep();
  }

  removeVolume(volume: string): Promise<void> {
    return this.scratch.removeVolume(volume);
  }
}
