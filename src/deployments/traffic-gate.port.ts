/**
 * Opens and closes the proxy's way to each traffic slot (a fixed address on the slot network) without
 * touching the proxy's configuration: a cutover that reloaded the proxy would rebind its listeners and
 * close its idle client connections. The state lives outside the platform process (the kernel's packet
 * filter), so traffic keeps flowing while the platform is stopped or restarting.
 */
/**
 * The port the proxy dials on every slot, whatever the service listens on: its routes then name
 * addresses only, so a service's port, and which service holds a pair, are the gate's business
 * and never a proxy load.
 */
export const SLOT_DIAL_PORT = 80;

/** An open slot: the address of a container, and the port its service listens on. */
export interface OpenSlot {
  ip: string;
  port: number;
}

export interface TrafficGate {
  /**
   * Makes `open` the whole set of open slots of `subnet`: the proxy's health check reaches its gate
   * responder through an open slot only, its connections to `<ip>:SLOT_DIAL_PORT` reach `<ip>:<port>`,
   * and new connections to any other address of the subnet are refused at once (so a closed or empty
   * slot is never waited on).
   */
  sync(subnet: string, open: OpenSlot[], signal?: AbortSignal): Promise<void>;
  /** Removes every rule of this installation (tests, uninstall). */
  remove(signal?: AbortSignal): Promise<void>;
  /**
   * Every install's rules on this host, this one's included: the id they carry (see idOf) and the
   * subnets they name. An install's rules outlive it: its data directory gone, they stay.
   */
  installs(signal?: AbortSignal): Promise<GateInstall[]>;
  /** The id an install's rules carry, from its instance id. */
  idOf(instanceId: string): string;
  /** Removes the rules of the install with this id (one whose slot network is gone). */
  removeInstall(id: string, signal?: AbortSignal): Promise<void>;
  /** Whether the gate responder's port on 127.0.0.1 can be bound (before this install's responder takes it). */
  portFree(): Promise<boolean>;
}

export interface GateInstall {
  id: string;
  subnets: string[];
}
