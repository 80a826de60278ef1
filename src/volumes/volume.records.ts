/** A named volume of a service: a Docker volume that outlives deployments, mounted at `mountPath` in every container of the service. */
export interface ServiceVolumeRecord {
  serviceId: string;
  name: string;
  mountPath: string;
  createdAt: Date;
}
