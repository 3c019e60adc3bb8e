/**
 * The edge's work on responses in the data plane: operator header rules (set, add, remove per
 * site and path), the in-memory cache (lookup before the upstream; capture of cacheable
 * responses on the selected paths), and gzip/Brotli compression when the client accepts it, the
 * content type and size qualify, and the upstream did not already encode the body.
 */
import { Duplex } from "node:stream";
import zlib from "node:zlib";
import { type Encoding, pickEncoding } from "../../net/accept.ts";
import type { AccessRecord } from "../../mod/access_log/record.ts";
import type { Clock } from "../../mod/core/clock.ts";
import {
  cacheableTtl,
  cacheKey,
  type EdgeCache,
  requestMayUseCache,
  varyNames,
} from "../../mod/protection/edge_cache.ts";
import type { CompiledSite } from "../../mod/data_plane/policy.ts";
import type { CompiledProtection } from "../../mod/protection/protection_compile.ts";
import type { ChainSink } from "../../mod/protection/protection_runtime.ts";
import type { DirectAnswer } from "../../net/direct_answer.ts";
import { type NormalPath, underPrefix } from "../../engine/path_normalize.ts";

/** What the edge reads of one request: the transaction is one, so nothing is copied for it. */
export interface EdgeRequest {
  readonly req: Request;
  readonly record: AccessRecord;
  readonly chain: ChainSink;
  /** The target as sent: what the upstream receives, so what a cached answer is kept under. */
  readonly pathAndQuery: string;
  /** The path as the site's upstream reads it: what header rules and cache paths select. */
  readonly view: { readonly normalPath: NormalPath };
}

/** An upstream's answer as the edge takes it: its `Response`, and whether its body streams. */
export type UpstreamAnswer = Pick<DirectAnswer, "toResponse" | "body">;

const NO_TRANSFORM = /\bno-transform\b/i;

function applyHeaderRules(
  p: CompiledProtection,
  siteId: string,
  path: NormalPath,
  headers: Headers,
): void {
  for (const r of p.headerRules) {
    if (r.site_id !== null && r.site_id !== siteId) continue;
    if (!underPrefix(path, r.path_prefix)) continue;
    if (r.op === "set") headers.set(r.name, r.value);
    else if (r.op === "add") headers.append(r.name, r.value);
    else headers.delete(r.name);
  }
}

/**
 * Whether the request may use the cache: its normalised path is under a cache path, and it was
 * sent in that form. A variant the normaliser had to resolve (`/static/..;/account`, `//a`) is
 * never served from or stored in the cache: the upstream may read it otherwise than the
 * normaliser (that is how a private page is cached under a static-looking key), and keyed by
 * its bytes it would only fill the cache with copies.
 */
function cachePathSelected(p: CompiledProtection, siteId: string, path: NormalPath): boolean {
  return path.canonical && path.problem === undefined &&
    p.edge.cache.paths.some((s) =>
      (s.site_id === null || s.site_id === siteId) && underPrefix(path, s.path_prefix)
    );
}

/** Whether an answer of `size` bytes (null: unknown) is under the compression threshold. */
function tooSmall(p: CompiledProtection, size: number | null): boolean {
  return size !== null && size < p.edge.compression.min_bytes;
}

function compressible(p: CompiledProtection, res: Response): boolean {
  if (res.body === null || res.status < 200 || res.status === 204 || res.status === 206) {
    return false;
  }
  if (res.headers.has("content-encoding")) return false;
  if (NO_TRANSFORM.test(res.headers.get("cache-control") ?? "")) return false;
  const type = (res.headers.get("content-type") ?? "").toLowerCase();
  // An event stream is read as it comes: a compressor holds its events back until enough bytes
  // gather (often until the stream ends), so it is never compressed, whatever `types` says.
  if (type.startsWith("text/event-stream")) return false;
  return p.edge.compression.types.some((t) => type.startsWith(t));
}

/**
 * A Brotli compressor flushed (`BROTLI_OPERATION_FLUSH`, Brotli's Z_SYNC_FLUSH) after each chunk,
 * for a streamed answer: unflushed, the encoder holds a progress stream or long poll until its
 * window fills or the answer ends. Flushing costs some ratio, so a whole answer is not flushed.
 */
function flushedBrotli(): TransformStream<Uint8Array, Uint8Array> {
  const z = zlib.createBrotliCompress();
  let out!: TransformStreamDefaultController<Uint8Array>;
  z.on("data", (b: Uint8Array) => out.enqueue(b));
  z.on("error", (e: Error) => out.error(e));
  const step = (chunk?: Uint8Array) =>
    new Promise<void>((resolve) => {
      if (chunk === undefined) z.end(resolve);
      else {
        z.write(chunk);
        // The output is enqueued before the callback runs.
        z.flush(zlib.constants.BROTLI_OPERATION_FLUSH, resolve);
      }
    });
  return new TransformStream({
    start: (ctl) => void (out = ctl),
    transform: (chunk) => step(chunk),
    flush: () => step(),
    cancel: () => void z.destroy(),
  });
}

/**
 * `streamed`: the upstream's answer was not whole within the upstream client's read-ahead. Its
 * bytes must flow as they arrive; `CompressionStream`'s gzip already flushes each chunk it is
 * given, Brotli is flushed by {@link flushedBrotli}.
 */
function compress(res: Response, encoding: Encoding, streamed: boolean): Response {
  const stream = encoding === "gzip"
    ? res.body!.pipeThrough(new CompressionStream("gzip"))
    : res.body!.pipeThrough(
      streamed
        ? flushedBrotli()
        : Duplex.toWeb(zlib.createBrotliCompress()) as TransformStream<Uint8Array, Uint8Array>,
    );
  const headers = new Headers(res.headers);
  headers.delete("content-length");
  headers.set("content-encoding", encoding);
  headers.append("vary", "Accept-Encoding");
  return new Response(stream, { status: res.status, statusText: res.statusText, headers });
}

/** Passes the body through while keeping a copy up to `limit` bytes; `done` gets the copy. */
function capture(
  body: ReadableStream<Uint8Array>,
  limit: number,
  done: (bytes: Uint8Array) => void,
) {
  const chunks: Uint8Array[] = [];
  let total = 0;
  let over = false;
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, ctl) {
        if (!over) {
          total += chunk.length;
          if (total > limit) over = true;
          else chunks.push(chunk);
        }
        ctl.enqueue(chunk);
      },
      flush() {
        if (over) return;
        const all = new Uint8Array(total);
        let at = 0;
        for (const c of chunks) {
          all.set(c, at);
          at += c.length;
        }
        done(all);
      },
    }),
  );
}

/** True when the edge does nothing to an upstream response under `p` (no cache, compression or header rule). */
export function edgeIdle(p: CompiledProtection): boolean {
  const edge = p.edge;
  return !edge.cache.enabled && !edge.compression.gzip && !edge.compression.brotli &&
    p.headerRules.length === 0;
}

export function createEdgeResponder(deps: { cache: EdgeCache; clock: Clock }) {
  const { cache, clock } = deps;

  /** Compression, when the client accepts it and the answer qualifies (its size checked first). */
  function compressed(
    tx: EdgeRequest,
    p: CompiledProtection,
    res: Response,
    streamed: boolean,
  ): Response {
    const req = tx.req;
    const encoding = req.method === "HEAD"
      ? undefined
      : pickEncoding(req.headers.get("accept-encoding"), p.edge.compression);
    if (encoding && compressible(p, res)) {
      tx.chain.add("compress", encoding);
      return compress(res, encoding, streamed);
    }
    return res;
  }

  return {
    /** A cached answer for the request, or undefined. */
    lookup(tx: EdgeRequest, p: CompiledProtection, site: CompiledSite): Response | undefined {
      const { req, record, chain } = tx;
      const path = tx.view.normalPath;
      if (
        !p.edge.cache.enabled || !requestMayUseCache(req) || !cachePathSelected(p, site.id, path)
      ) return undefined;
      if (/\bno-cache\b/i.test(req.headers.get("cache-control") ?? "")) return undefined;
      const key = cacheKey(site.id, record.host.toLowerCase(), tx.pathAndQuery);
      const hit = cache.get(key, req, clock.now());
      if (!hit) {
        chain.add("cache", "miss");
        return undefined;
      }
      chain.add("cache", "hit");
      const headers = new Headers(hit.headers as Array<[string, string]>);
      headers.set("x-waf-trace-id", record.trace_id);
      headers.set("x-waf-cache", "HIT");
      const body = req.method === "HEAD" ? null : hit.body as Uint8Array<ArrayBuffer>;
      const res = new Response(body, { status: hit.status, headers });
      applyHeaderRules(p, site.id, path, res.headers);
      return tooSmall(p, hit.body.length) ? res : compressed(tx, p, res, false);
    },

    /**
     * Header rules, cache capture and compression for an upstream's answer; one whose body was
     * not whole within the upstream client's read-ahead (a stream) is flushed by a compressor.
     */
    respond(
      tx: EdgeRequest,
      p: CompiledProtection,
      site: CompiledSite,
      answer: UpstreamAnswer,
    ): Response {
      const res = answer.toResponse();
      const streamed = answer.body instanceof ReadableStream;
      if (edgeIdle(p)) return res;
      const { req, record, chain, pathAndQuery } = tx;
      const path = tx.view.normalPath;
      const length = res.headers.get("content-length");
      const size = length === null ? null : Number(length);
      let out = res;
      if (
        p.edge.cache.enabled && req.method === "GET" && res.body !== null &&
        requestMayUseCache(req) &&
        cachePathSelected(p, site.id, path) &&
        (size === null || size <= p.edge.cache.max_object_bytes)
      ) {
        const ttl = cacheableTtl(res.status, res.headers);
        if (ttl > 0) {
          cache.setMaxBytes(p.edge.cache.max_bytes);
          const stored = [...res.headers].filter(([k]) => k !== "x-waf-trace-id");
          const vary = varyNames(res.headers);
          const expiresAt = clock.now() + ttl * 1000;
          const host = record.host.toLowerCase();
          out = new Response(
            capture(
              res.body,
              p.edge.cache.max_object_bytes,
              (body) =>
                cache.put(host, pathAndQuery, req, {
                  status: res.status,
                  headers: stored,
                  body,
                  expiresAt,
                  vary,
                  siteId: site.id,
                  path: path.text,
                }),
            ),
            { status: res.status, statusText: res.statusText, headers: res.headers },
          );
          out.headers.set("x-waf-cache", "MISS");
          chain.add("cache", "store");
        }
      }
      applyHeaderRules(p, site.id, path, out.headers);
      return tooSmall(p, size) ? out : compressed(tx, p, out, streamed);
    },
  };
}

export type EdgeResponder = ReturnType<typeof createEdgeResponder>;
