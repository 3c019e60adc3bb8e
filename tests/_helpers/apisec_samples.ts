/** Discovery samples for the API inventory's tests. */
import type { Sample } from "../../mod/apisec/endpoint_stats.ts";

/** The time the samples are taken at unless told. */
export const T0 = Date.UTC(2026, 0, 1);

/** A `GET` of `path` on site `s1` answered 200 at {@link T0}, with `extra` changed. */
export function sample(path: string, extra: Partial<Sample> = {}): Sample {
  return {
    siteId: "s1",
    method: "GET",
    path,
    status: 200,
    time: T0,
    queryNames: [],
    bodyNames: [],
    contentType: "",
    ...extra,
  };
}
