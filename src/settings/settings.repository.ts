import { Setting, type SettingRow } from '../persistence/entities.js';
import { Repository } from '../persistence/repository.js';

/** Platform-wide settings, one JSON value per key. */
export class SettingsRepository extends Repository {
  async get(key: string): Promise<string | null> {
    return (await this.row(Setting, { key }))?.value ?? null;
  }
  async put(key: string, value: string, now: Date): Promise<void> {
    this.written(Setting);
    await this.fork().upsert(Setting, { key, value, updatedAt: now } as SettingRow);
  }
  delete(key: string): Promise<void> {
    return this.deleteRows(Setting, { key });
  }
}
