/** Process readiness as the health probes report it. */
export interface Readiness {
  store: boolean;
  dataPlane: boolean;
  management: boolean;
  shuttingDown: boolean;
  /**
   * With data-plane workers: true once every worker enforces the current policy (until then
   * the data plane is not ready).
   */
  dataPlaneCurrent?: () => boolean;
  /**
   * The production store: false while its database cannot be reached (the data planes keep
   * enforcing the last policy; management writes answer 503 `STORE_UNAVAILABLE`).
   */
  storeAvailable?: () => boolean;
}

/** `"ok"`, or `"unavailable"` while the production store's database cannot be reached. */
export function storeState(r: Readiness): "ok" | "unavailable" | "starting" {
  if (!r.store) return "starting";
  return r.storeAvailable?.() === false ? "unavailable" : "ok";
}

export function createReadiness(): Readiness {
  return { store: false, dataPlane: false, management: false, shuttingDown: false };
}

/** The data plane is listening and (with workers) every worker has the current policy. */
export function dataPlaneReady(r: Readiness): boolean {
  return r.dataPlane && (r.dataPlaneCurrent?.() ?? true);
}

/** Ready means every part is up and the process is not draining. */
export function isReady(r: Readiness): boolean {
  return r.store && dataPlaneReady(r) && r.management && !r.shuttingDown;
}
