/** A server other than the platform's host, as the engine adapters reach it (its engine over mutual TLS). */
export interface PlacedServer {
  id: string;
  name: string;
  nodeId: string;
  /** The node's address: its engine's API listens there, and a database's port is published there. */
  address: string;
}

/**
 * Where databases and storage instances run on the cluster (issue 31), for the adapter that sends each container
 * call to the engine of the server holding the service's volume. On a single server every answer is "the
 * platform's own engine", from ClusterSettings' kept answer that the cluster has not formed.
 */
export interface StatefulPlacements {
  /** The other server holding this stateful service's volume; null: the platform's own engine (or not stateful). */
  remoteHolderOf(serviceId: string): Promise<PlacedServer | null>;
  /**
   * The other servers a stateful service's containers may be on (every one not down: a move leaves the earlier
   * server's stopped container for a moment); none for a stateless service or before the cluster formed.
   */
  serversOf(serviceId: string): Promise<PlacedServer[]>;
  /** The other servers that may run a database's container now (joined, not down). */
  remoteServers(): Promise<PlacedServer[]>;
  /** Those of them that hold a database's or storage instance's volume: what install-wide lists and samples read. */
  holderServers(): Promise<PlacedServer[]>;
  /** Whether the service is a database or a storage instance (false for one that does not exist). */
  isStateful(serviceId: string): Promise<boolean>;
  /**
   * The environment's overlay network (made when missing), where services on any server reach a database by name;
   * null before the cluster formed (there is no swarm to make it in).
   */
  overlayOf(environmentId: string, signal?: AbortSignal): Promise<string | null>;
}
