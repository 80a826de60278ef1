export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock `offsetMs` ahead of another: how the end-to-end tests make a schedule's slot come without waiting for it. */
export function offsetClock(clock: Clock, offsetMs: number): Clock {
  return offsetMs === 0 ? clock : { now: () => new Date(clock.now().getTime() + offsetMs) };
}
