/** Process readiness as the health probes report it. */
export interface Readiness {
  store: boolean;
  dataPlane: boolean;
  management: boolean;
  shuttingDown: boolean;
}

export function createReadiness(): Readiness {
  return { store: false, dataPlane: false, management: false, shuttingDown: false };
}

/** Ready means every part is up and the process is not draining. */
export function isReady(r: Readiness): boolean {
  return r.store && r.dataPlane && r.management && !r.shuttingDown;
}
