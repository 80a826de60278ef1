import type Docker from 'dockerode';
import type { PointInTimeRecovery, RecoveryRequest, RecoveryResult } from '../../src/index.js';
import { ContainerExec } from './container-exec.js';
import { ScratchDocker } from './scratch-docker.js';

const POLL_MS = 500;
const STOP_GRACE_SECONDS = 60;
/** The WAL files for recovery, inside the data directory (removed once the server is promoted). */
const RESTORE_DIR = 'slipway-restore-wal';
const END_OF_ARCHIVE = /recovery ended before configured recovery target was reached/;

/** `2026-11-28 04:02:55.000+00`: what recovery_target_time reads (it refuses the ISO `T`/`Z` form). */
export function recoveryTargetTime(at: Date): string {
  return `${at.toISOString().replace('T', ' ').replace('Z', '')}+00`;
}

/**
 * PostgreSQL's own point-in-time recovery in scratch containers of the database's image, on a private
 * network (docs/backups.md, Point-in-time recovery):
 *
 * 1. a helper (the image, its entrypoint replaced by `sleep`) mounts the volume and extracts the base
 *    backup into it (`tar -x`, its manifest left out), copies in the WAL files, writes recovery.signal
 *    and gives the directory to the image's postgres user;
 * 2. the server runs on the volume with `restore_command` (cp from that directory) and
 *    `recovery_target_time`, promoting at the target; when the archive ends before a commit after the
 *    target (nothing was committed between its last transaction and the target) PostgreSQL stops with
 *    "recovery ended before configured recovery target was reached", and the server is started again
 *    without a target: recovery to the archive's end is then the state at the target;
 * 3. once promoted, pg_last_xact_replay_timestamp() is the last transaction applied; the server stops
 *    cleanly (a checkpoint), the WAL directory goes, and the volume is a data directory to start from.
 */
export class PostgresPointInTimeRecovery implements PointInTimeRecovery {
  private readonly scratch: ScratchDocker;

  constructor(
    private readonly docker: Docker,
    instanceId: string,
    private readonly prefix: string,
  ) {
    this.scratch = new ScratchDocker(docker, instanceId, 'pitr');
  }

  async recover(request: RecoveryRequest): Promise<RecoveryResult> {
    const { signal, log } = request;
    const name = `${this.prefix}-pitr-${request.id}`;
    const started: string[] = [];
    try {
      await this.scratch.ensureImage(request.image, signal, log);
      await this.scratch.network(name, signal);
      log(`Private network ${name}; filling volume ${request.volume}`);
      await this.fill(request, name, started);
      let result = await this.runRecovery(request, name, started, true);
      if (result === 'end-of-archive') {
        log(
          'The archive holds no commit after the target: nothing was committed between its last transaction and the target; recovering to its end',
        );
        result = await this.runRecovery(request, name, started, false);
      }
      if (result === 'end-of-archive') throw new Error('recovery ended before the archive reached the target');
      await this.cleanUp(request, name, started);
      return result;
    } finally {
      for (const id of started) await this.scratch.remove(id).catch(() => undefined);
      await this.scratch.removeNetwork(name).catch(() => undefined);
    }
  }

  sweep(): Promise<string[]> {
    return this.scratch.sweep();
  }

  removeVolume(volume: string): Promise<void> {
    return this.scratch.removeVolume(volume);
  }

  /** A helper container on the volume: sleep, whatever the image's entrypoint does. */
  private async helper(request: RecoveryRequest, network: string, started: string[], suffix: string): Promise<ContainerExec> {
    const { id } = await this.scratch.start(
      {
        name: `${network}-${suffix}`,
        image: request.image,
        entrypoint: ['sleep'],
        cmd: ['infinity'],
        network,
        mounts: [{ volume: request.volume, target: request.dataDir }],
        user: '0',
      },
      request.signal,
    );
    started.push(id);
    return new ContainerExec(this.docker, id, request.signal, (line) => request.log(line, 'stderr'));
  }

  private async fill(request: RecoveryRequest, network: string, started: string[]): Promise<void> {
    const { dataDir, log } = request;
    const exec = await this.helper(request, network, started, 'fill');
    const existing = (await exec.run(['find', dataDir, '-mindepth', '1', '-maxdepth', '1'])).trim();
    if (existing) throw new Error(`volume ${request.volume} is not empty; a restore fills only a new one`);
    log('Extracting the base backup');
    await exec.run(['tar', '-x', '-f', '-', '-C', dataDir, '--exclude=backup_manifest'], { stdin: request.base });
    await exec.run(['mkdir', '-p', `${dataDir}/${RESTORE_DIR}`]);
    let bytes = 0;
    for (const file of request.files) {
      const input = await file.open(request.signal);
      await exec.run(['cp', '/dev/stdin', `${dataDir}/${RESTORE_DIR}/${file.name}`], { stdin: input });
      bytes += 1;
    }
    log(`${bytes} WAL files copied from the archive`);
    await exec.run(['touch', `${dataDir}/recovery.signal`]);
    await exec.run(['chown', '-R', 'postgres:postgres', dataDir]);
    await exec.run(['chmod', '700', dataDir]);
    await this.scratch.remove(started.pop()!);
  }

  /** Runs the server on the volume until it is promoted, or stops at the archive's end before the target. */
  private async runRecovery(
    request: RecoveryRequest,
    network: string,
    started: string[],
    withTarget: boolean,
  ): Promise<RecoveryResult | 'end-of-archive'> {
    const { dataDir, log, signal } = request;
    const args = [
      'postgres',
      '-c',
      'archive_mode=off',
      '-c',
      `restore_command=cp ${dataDir}/${RESTORE_DIR}/%f %p`,
      '-c',
      'recovery_target_timeline=latest',
      '-c',
      'listen_addresses=',
      ...(withTarget ? ['-c', `recovery_target_time=${recoveryTargetTime(request.at)}`, '-c', 'recovery_target_action=promote'] : []),
    ];
    log(withTarget ? `Recovering to ${request.at.toISOString()}` : 'Recovering to the end of the archive');
    const { id } = await this.scratch.start(
      {
        name: `${network}-server${withTarget ? '' : '-end'}`,
        image: request.image,
        cmd: args,
        env: request.env,
        network,
        mounts: [{ volume: request.volume, target: dataDir }],
      },
      signal,
    );
    started.push(id);
    const exec = new ContainerExec(this.docker, id, signal, () => undefined);
    const user = request.env.POSTGRES_USER ?? 'postgres';
    for (;;) {
      if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : new Error('aborted');
      const state = await this.scratch.state(id);
      if (!state.running) {
        const lines = await this.scratch.tail(id, 60);
        if (withTarget && lines.some((line) => END_OF_ARCHIVE.test(line))) {
          await this.scratch.remove(started.pop()!);
          return 'end-of-archive';
        }
        for (const line of lines.slice(-15)) log(line, 'stderr');
        const fatal = lines.filter((line) => /FATAL|PANIC/.test(line)).at(-1);
        throw new Error(`PostgreSQL stopped during recovery (exit ${state.exitCode}): ${fatal ?? lines.at(-1) ?? 'no message'}`);
      }
      let answer: string | null = null;
      try {
        answer = (
          await exec.run(
            [
              'psql',
              '-X',
              '-q',
              '-A',
              '-t',
              '-F',
              '\t',
              '-U',
              user,
              '-d',
              'postgres',
              '-c',
              "SELECT pg_is_in_recovery(), coalesce(to_char(pg_last_xact_replay_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'), '')",
            ],
            { env: { PGPASSWORD: request.env.POSTGRES_PASSWORD ?? '' } },
          )
        ).trim();
      } catch {
        // Starting up, or not consistent yet: asked again.
      }
      if (answer?.startsWith('f')) {
        const reached = answer.split('\t')[1] ?? '';
        for (const line of (await this.scratch.tail(id, 40)).filter((l) =>
          /recovery stopping|last completed transaction|redo done|selected new timeline|archive recovery complete/.test(l),
        ))
          log(line);
        log('Promoted; stopping the server cleanly');
        await this.scratch.stop(id, STOP_GRACE_SECONDS);
        await this.scratch.remove(started.pop()!);
        return { reachedAt: reached ? new Date(reached) : null, endOfArchive: !withTarget };
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }

  /** The WAL files and a recovery.signal left over go: the volume is a plain data directory. */
  private async cleanUp(request: RecoveryRequest, network: string, started: string[]): Promise<void> {
    const exec = await this.helper(request, network, started, 'clean');
    await exec.run(['rm', '-rf', `${request.dataDir}/${RESTORE_DIR}`, `${request.dataDir}/recovery.signal`]);
    await this.scratch.remove(started.pop()!);
  }
}
