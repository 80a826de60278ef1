import { newId } from '../domain/ids.js';
import { SigninAddress } from '../persistence/event-entities.js';
import { Repository } from '../persistence/repository.js';

/** How many addresses are remembered per user: the oldest seen is forgotten first. */
const KEPT_PER_USER = 50;

/** The addresses each user signed in from. */
export class SigninAddressRepository extends Repository {
  /** Records a sign-in from `address`; true when the user had signed in before, but never from there. */
  async remember(userId: string, address: string, now: Date): Promise<boolean> {
    const known = await this.rows(SigninAddress, { userId }, { lastSeenAt: 'desc' });
    const seen = known.find((row) => row.address === address);
    const em = this.fork();
    if (seen) {
      await em.nativeUpdate(SigninAddress, { id: seen.id }, { lastSeenAt: now });
      return false;
    }
    await em.insert(SigninAddress, { id: newId(), userId, address, firstSeenAt: now, lastSeenAt: now });
    const stale = known.slice(KEPT_PER_USER - 1).map((row) => row.id);
    if (stale.length > 0) await em.nativeDelete(SigninAddress, { id: { $in: stale } });
    return known.length > 0;
  }
  async deleteOfUser(userId: string): Promise<void> {
    await this.fork().nativeDelete(SigninAddress, { userId });
  }
}
