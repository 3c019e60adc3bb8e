/**
 * The management API as the benchmarks drive it: first-install setup with the token of
 * `runtime/setup.url`, a signed-in session, the benchmark sites created as a user creates them
 * (`POST /api/sites`), and the access log's counters (`GET /api/logs/stats`).
 */

/** A signed-in administrator of one WAF's management listener. */
export class BenchApi {
  readonly #base: string;
  #cookie = "";
  #csrf = "";

  constructor(mgmtPort: number) {
    this.#base = `http://127.0.0.1:${mgmtPort}`;
  }

  /** Completes setup (the token from `<dataDir>/runtime/setup.url`) and signs in. */
  async setup(dataDir: string): Promise<void> {
    const url = await setupUrl(`${dataDir}/runtime/setup.url`);
    const token = /#token=([A-Za-z0-9_-]+)/.exec(url)?.[1];
    if (token === undefined) throw new Error(`no setup token in ${dataDir}/runtime/setup.url`);
    const admin = { username: "bench", password: "Granite-Harbor-Lantern-58" };
    await this.#call("POST", "/api/setup", admin, { "x-waf-setup-token": token }, 201);
    const res = await this.#send("POST", "/api/auth/login", admin, {});
    if (res.status !== 200) throw new Error(`login: ${res.status} ${await res.text()}`);
    await res.body?.cancel();
    const cookies = new Map(
      res.headers.getSetCookie().map((c) => c.split(";")[0]!.split("=") as [string, string]),
    );
    this.#csrf = cookies.get("waf_csrf") ?? "";
    this.#cookie = `waf_session=${cookies.get("waf_session")}; waf_csrf=${this.#csrf}`;
  }

  /** Creates a site; resolves with its id. */
  async createSite(site: Record<string, unknown>): Promise<string> {
    const body = await this.#call("POST", "/api/sites", site, {}, 201);
    return String(body["id"]);
  }

  /** The access log's counters (`queued`, `written`, `dropped`, `sampled`, ...). */
  async logStats(): Promise<Record<string, unknown>> {
    return await this.#call("GET", "/api/logs/stats", undefined, {}, 200);
  }

  async #call(
    method: string,
    path: string,
    body: unknown,
    headers: Record<string, string>,
    expect: number,
  ): Promise<Record<string, unknown>> {
    const res = await this.#send(method, path, body, headers);
    const text = await res.text();
    if (res.status !== expect) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : {};
  }

  #send(
    method: string,
    path: string,
    body: unknown,
    extra: Record<string, string>,
  ): Promise<Response> {
    const headers: Record<string, string> = { ...extra };
    if (body !== undefined) headers["content-type"] = "application/json";
    if (this.#cookie) {
      headers["cookie"] = this.#cookie;
      if (method !== "GET") headers["x-csrf-token"] = this.#csrf;
    }
    return fetch(this.#base + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  }
}

/** The setup link, once the server has written it (shortly after it listens). */
async function setupUrl(path: string): Promise<string> {
  for (let i = 0;; i++) {
    try {
      return await Deno.readTextFile(path);
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound) || i >= 400) throw err;
      await new Promise((r) => setTimeout(r, 25));
    }
  }
}
