/**
 * Preloaded into a `waf` child process (`deno run --preload`) by tests that run the built-in
 * default configuration, whose listeners are the fixed ports 8080 and 9443: every `Deno.serve`,
 * `Deno.listen` and `Deno.listenTls` (the connection fronts) binds the host it was given on port 0
 * instead, and appends the address it asked for (`host:port`, one per line, each once: `waf serve`
 * checks every address before it binds it; private listeners on port 0 are not recorded) to the
 * file named by `WAF_TEST_REQUESTED_LISTEN`. The test can then assert the defaults without
 * needing those ports free on the machine.
 */
const record = Deno.env.get("WAF_TEST_REQUESTED_LISTEN");
const serve = Deno.serve;
const listen = Deno.listen;
const listenTls = Deno.listenTls;

const recorded = new Set<string>();

function portZero<T extends { hostname?: string; port?: number }>(options: T): T {
  const address = `${options.hostname}:${options.port}`;
  if (record !== undefined && options.port !== 0 && !recorded.has(address)) {
    recorded.add(address);
    Deno.writeTextFileSync(record, `${address}\n`, { append: true });
  }
  return { ...options, port: 0 };
}

// waf calls `Deno.serve(options, handler)` (net/listen.ts); other call shapes pass through.
Deno.serve = ((...args: unknown[]) => {
  const [first, ...rest] = args;
  if (typeof first === "object" && first !== null && "port" in first) {
    return (serve as (...a: unknown[]) => Deno.HttpServer)(
      portZero(first as Deno.ServeTcpOptions),
      ...rest,
    );
  }
  return (serve as (...a: unknown[]) => Deno.HttpServer)(...args);
}) as typeof Deno.serve;

Deno.listen = ((options: Deno.ListenOptions) =>
  (listen as (o: unknown) => Deno.Listener)(
    "port" in options ? portZero(options) : options,
  )) as typeof Deno.listen;
Deno.listenTls =
  ((options: Deno.ListenTlsOptions & Deno.TlsCertifiedKeyPem) =>
    listenTls(portZero(options))) as typeof Deno.listenTls;
