import type { ObjectStoreFactory } from '../../src/backups/object-store.port.js';

/** For a platform built without an object-store client (operator commands, router tests). */
export const UNCONFIGURED_OBJECT_STORES: ObjectStoreFactory = () => {
  throw new Error('This platform has no object-store client');
};
