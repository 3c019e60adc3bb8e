/** Hono environment shared by every management route. */
import type { Context } from "hono";
import type { PeerCertificate } from "../../net/mtls_listen.ts";

export interface Principal {
  readonly kind: "user" | "token";
  /** User id or token id. */
  readonly id: string;
  /** Username for users; the token's note is metadata only and never an identity. */
  readonly name: string;
  readonly role?: string;
  readonly permissions: readonly string[];
  readonly sessionHash?: string;
}

export type Env = {
  Bindings: {
    remoteAddr?: { hostname: string; port: number };
    tls?: boolean;
    /** Frees this connection from the listener's per-client cap (an authenticated feed). */
    longLived?: () => void;
    /** The client certificate, on the cluster's mTLS listener only. */
    peer?: PeerCertificate;
  };
  Variables: {
    traceId: string;
    eventId: string;
    clientIp: string;
    principal: Principal | undefined;
    /** The matched route's pattern (`/api/sites/:id`), for the request metrics. */
    route: string | undefined;
  };
};

export type Ctx = Context<Env>;
