/**
 * `waf serve`'s listener check before it writes anything: every listener address the
 * configuration names (data HTTP, data HTTPS, management, the cluster's mTLS listener) is bound
 * at once and released, so a start on taken ports names each listener that cannot open, with
 * its address, and leaves the data directory as it was.
 */
import type { Config } from "../mod/config/config.ts";
import { parseListen } from "../mod/config/config_schema.ts";
import { formatAddress, type ListenerError, listenerError } from "../net/listen.ts";

/** One listener `waf serve` opens: its name in messages and its address. */
export interface ListenerAddress {
  readonly listener: string;
  readonly hostname: string;
  readonly port: number;
}

/** The listeners this configuration opens, in the order `app/server.ts` opens them. */
export function configuredListeners(config: Config): ListenerAddress[] {
  const out: ListenerAddress[] = [];
  const add = (listener: string, listen: string | undefined) => {
    const addr = listen === undefined ? undefined : parseListen(listen);
    if (addr) out.push({ listener, ...addr });
  };
  add("management", config.server.management.listen);
  // A node dials its controller; only a controller opens the cluster listener.
  if (config.cluster.role !== "node") add("cluster", config.cluster.listen);
  add("data", config.server.data.listen);
  add("data HTTPS", config.server.data.https_listen);
  return out;
}

/**
 * The listeners that cannot bind their address now. All are held open until each has been
 * tried, then closed (a listening socket that accepted nothing frees its port at once).
 */
export function unbindable(listeners: readonly ListenerAddress[]): ListenerError[] {
  const held: Deno.Listener[] = [];
  const failed: ListenerError[] = [];
  try {
    for (const l of listeners) {
      try {
        held.push(Deno.listen({ hostname: l.hostname, port: l.port }));
      } catch (err) {
        failed.push(listenerError(l.listener, formatAddress(l.hostname, l.port), err));
      }
    }
  } finally {
    for (const l of held) l.close();
  }
  return failed;
}
