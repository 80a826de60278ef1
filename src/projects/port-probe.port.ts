/** Tells whether something outside the platform already holds a TCP port on this host. */
export interface PortProbe {
  isFree(port: number): Promise<boolean>;
}
