/** Sends requests to the data plane with a chosen Host header (plain fetch cannot set it). */

const client = Deno.createHttpClient({ allowHost: true });

/** `fetch` that may set `host`; the response body must be consumed or cancelled. */
export function hostFetch(url: string, host: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.set("host", host);
  return fetch(url, { ...init, headers, client });
}
