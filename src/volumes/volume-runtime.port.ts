/** The service's containers, stopped for a consistent snapshot or a restore of a volume and started again. */
export interface VolumeRuntime {
  /** Stops the service's running containers (each given its grace); the ids stopped. */
  stopContainers(serviceId: string): Promise<string[]>;
  /** Starts these containers again. */
  startContainers(ids: string[]): Promise<void>;
  /** Points routes and host ports at the started containers again at once (instead of at the next reconcile pass). */
  repoint?(): Promise<void>;
}
