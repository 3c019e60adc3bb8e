/**
 * `waf temporary-online probe --url URL [--timeout 5s] [--ca-file PEM] [--json]`: one outbound
 * request with DNS, TCP, TLS and HTTP timings, then exit. A separate operator tool.
 */
import { durationMs } from "../mod/config/config.ts";
import type { Translate } from "./i18n/i18n.ts";
import { probe, type ProbeReport, type Step } from "../mod/ops/probe.ts";
import { VERSION } from "../mod/core/version.ts";
import { type Command, EXIT_FAILURE, EXIT_OK } from "./context.ts";
import { cliTranslator } from "./lang.ts";
import { boolFlag, flagsOrUsage, stringFlag, usageError } from "./output.ts";

const WORDS = ["temporary-online", "probe"];

function ms(value: number): string {
  return `${value.toFixed(1)} ms`;
}

function line<T>(
  t: Translate,
  label: string,
  step: Step<T>,
  describe: (detail: T) => string,
): string {
  const name = label.padEnd(5);
  switch (step.status) {
    case "ok":
      return `${name} ${t("probe.ok").padEnd(8)} ${ms(step.ms).padStart(10)}  ${
        describe(step.detail)
      }`;
    case "skipped":
      return `${name} ${t("probe.skipped").padEnd(8)} ${"".padStart(10)}  ${
        t(step.reason === "ip_literal" ? "probe.skip_ip" : "probe.skip_plain")
      }`;
    case "failed":
      return `${name} ${t("probe.failed").padEnd(8)} ${ms(step.ms).padStart(10)}  ${step.error}`;
    case "not_run":
      return `${name} ${t("probe.not_run")}`;
  }
}

function render(t: Translate, report: ProbeReport): string {
  const none = "-";
  return [
    line(t, "DNS", report.dns, (d) => d.addresses.join(", ")),
    line(
      t,
      "TCP",
      report.tcp,
      (d) => `${d.address.includes(":") ? `[${d.address}]` : d.address}:${d.port}`,
    ),
    line(t, "TLS", report.tls, (d) =>
      t("probe.tls_detail", {
        protocol: d.protocol ?? none,
        alpn: d.alpn ?? none,
        subject: d.subject ?? none,
        issuer: d.issuer ?? none,
        expires: d.validTo ?? none,
      })),
    line(t, "HTTP", report.http, (d) =>
      t("probe.http_detail", {
        status: `${d.status} ${d.statusText}`.trim(),
        bytes: d.headerBytes,
        ttfb: ms(d.ttfbMs),
      })),
  ].join("\n");
}

export const probeCommand: Command = async (args, global, deps) => {
  const { t } = await cliTranslator(global, deps);
  const flags = flagsOrUsage({ deps, t, words: WORDS }, args, {
    url: { type: "string" },
    timeout: { type: "string" },
    "ca-file": { type: "string" },
    json: { type: "boolean" },
  });
  if (typeof flags === "number") return flags;
  const raw = stringFlag(flags, "url");
  if (!raw) return usageError(deps, t, WORDS, t("flags.required", { option: "--url" }));
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return usageError(deps, t, WORDS, t("probe.bad_url", { url: raw }));
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return usageError(deps, t, WORDS, t("probe.bad_url", { url: raw }));
  }
  const timeout = stringFlag(flags, "timeout") ?? "5s";
  if (!/^\d+(ms|s|m)$/.test(timeout) || durationMs(timeout) === 0) {
    return usageError(
      deps,
      t,
      WORDS,
      t("flags.bad_duration", { option: "--timeout", value: timeout }),
    );
  }
  const caFile = stringFlag(flags, "ca-file");
  let caPem: string | undefined;
  if (caFile) {
    try {
      caPem = await Deno.readTextFile(caFile);
    } catch (err) {
      deps.stderr(`${t("probe.ca_unreadable", { path: caFile, error: String(err) })}\n`);
      return EXIT_FAILURE;
    }
  }
  const timeoutMs = durationMs(timeout);
  const report = await probe(
    { url, timeoutMs, caPem, userAgent: `waf-probe/${VERSION}` },
    { monotonic: () => performance.now() },
  );
  if (boolFlag(flags, "json")) {
    deps.stdout(JSON.stringify(report, null, 2) + "\n");
  } else {
    deps.stdout(`${t("probe.header", { url: report.url, timeout: timeoutMs })}\n`);
    deps.stdout(render(t, report) + "\n");
  }
  return report.http.status === "ok" ? EXIT_OK : EXIT_FAILURE;
};
