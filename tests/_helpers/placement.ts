/**
 * Builds engine requests that carry one value in one place, the way clients and attack
 * tools send it: data-driven detector cases (`tests/testdata/engine/*.json`) name a
 * placement per case.
 */
import type { EngineRequest } from "../../engine/types.ts";

export const PLACEMENTS = [
  "query",
  "query_name",
  "form",
  "json",
  "json_key",
  "header",
  "user_agent",
  "referer",
  "cookie",
  "cookie_name",
  "path",
  "matrix",
  "multipart",
  "multipart_filename",
  "multipart_name",
  "xml",
  "xml_attribute",
  "soap",
  "graphql",
  "graphql_get",
  "body",
] as const;
export type Placement = typeof PLACEMENTS[number];

const ENCODER = new TextEncoder();
const BROWSER: ReadonlyArray<readonly [string, string]> = [
  ["host", "shop.example.com"],
  ["user-agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/120.0 Safari/537.36"],
  ["accept", "*/*"],
];
const BOUNDARY = "----case7MA4YWxkTrZu0gW";

function escapeXml(s: string): string {
  return s.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;");
}

function post(path: string, type: string, body: string): EngineRequest {
  return {
    method: "POST",
    path,
    query: "",
    headers: [...BROWSER, ["content-type", type]],
    body: ENCODER.encode(body),
  };
}

function multipart(disposition: string, value: string): EngineRequest {
  return post(
    "/upload",
    `multipart/form-data; boundary=${BOUNDARY}`,
    `--${BOUNDARY}\r\nContent-Disposition: form-data; ${disposition}\r\n` +
      `Content-Type: text/plain\r\n\r\n${value}\r\n--${BOUNDARY}--\r\n`,
  );
}

/**
 * A request carrying `value` at `where`.
 *
 * @param value the raw value (percent-encoded by this function where the wire format needs it)
 * @param where the placement
 */
export function place(value: string, where: Placement): EngineRequest {
  const enc = encodeURIComponent(value);
  const get = (path: string, query: string): EngineRequest => ({
    method: "GET",
    path,
    query,
    headers: BROWSER,
  });
  switch (where) {
    case "query":
      return get("/search", `q=${enc}&page=1`);
    case "query_name":
      return get("/search", `${enc}=1`);
    case "form":
      return post("/search", "application/x-www-form-urlencoded", `q=${enc}&page=1`);
    case "json":
      return post("/api/search", "application/json", JSON.stringify({ q: value, page: 1 }));
    case "json_key":
      return post("/api/search", "application/json", JSON.stringify({ [value]: 1 }));
    case "header":
      return { ...get("/", ""), headers: [...BROWSER, ["x-comment", value]] };
    case "user_agent":
      return { ...get("/", ""), headers: [["host", "shop.example.com"], ["user-agent", value]] };
    case "referer":
      return { ...get("/", ""), headers: [...BROWSER, ["referer", value]] };
    case "cookie":
      return { ...get("/", ""), headers: [...BROWSER, ["cookie", `session=abc123; q=${enc}`]] };
    case "cookie_name":
      return { ...get("/", ""), headers: [...BROWSER, ["cookie", `${value}=1`]] };
    case "path":
      return get(`/items/${enc}/view`, "");
    case "matrix":
      return get(`/items;q=${enc}/view`, "");
    case "multipart":
      return multipart('name="comment"', value);
    case "multipart_filename":
      return multipart(`name="file"; filename="${value}"`, "hello");
    case "multipart_name":
      return multipart(`name="${value}"`, "hello");
    case "xml":
      return post("/api/items", "application/xml", `<item><q>${escapeXml(value)}</q></item>`);
    case "xml_attribute":
      return post("/api/items", "application/xml", `<item q="${escapeXml(value)}"/>`);
    case "soap":
      return post(
        "/service",
        "text/xml",
        '<?xml version="1.0"?><soapenv:Envelope xmlns:soapenv=' +
          '"http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body><search><q>' +
          escapeXml(value) + "</q></search></soapenv:Body></soapenv:Envelope>",
      );
    case "graphql":
      return post("/graphql", "application/json", JSON.stringify({ query: value }));
    case "graphql_get":
      return get("/graphql", `query=${enc}`);
    case "body":
      return { ...post("/submit", "", value), headers: BROWSER };
  }
}
