/**
 * The console's browser libraries, taken from their npm packages (exact versions in
 * `deno.json`) as text at start-up, so `deno compile` embeds them and the console works offline
 * with no CDN. The one place that knows these packages: Preact (components), its hooks, htm
 * (tagged templates instead of JSX, so there is no build step) and uPlot (charts).
 */
import preact from "preact" with { type: "text" };
import hooks from "preact/hooks" with { type: "text" };
import htm from "htm" with { type: "text" };
import uplot from "uplot/dist/uPlot.iife.min.js" with { type: "text" };
import uplotCss from "uplot/dist/uPlot.min.css" with { type: "text" };

export interface VendorFile {
  readonly path: string;
  readonly body: string;
}

const SOURCE_MAP = /\n?\/\/# sourceMappingURL=\S+\s*$/;

/** Replaces exactly one occurrence of `from` or fails start-up: a package update changed it. */
function replaceOnce(text: string, from: string, to: string, file: string): string {
  const at = text.indexOf(from);
  if (at < 0 || text.indexOf(from, at + 1) >= 0) {
    throw new Error(`Console vendor file "${file}": expected exactly one "${from}"`);
  }
  return text.slice(0, at) + to + text.slice(at + from.length);
}

/**
 * The files under `/console/assets/vendor/`. The hooks module imports the bare name "preact",
 * which a browser cannot resolve without an import map (an inline script the CSP forbids), so it
 * is pointed at the served file; uPlot ships a minified script that declares `var uPlot`, served
 * as a module by exporting that binding.
 */
export function vendorFiles(): readonly VendorFile[] {
  if (!uplot.includes("var uPlot=")) {
    throw new Error('Console vendor file "uplot.js": expected the "var uPlot=" declaration');
  }
  return [
    { path: "preact.js", body: preact.replace(SOURCE_MAP, "\n") },
    {
      path: "hooks.js",
      body: replaceOnce(hooks, 'from"preact"', 'from"./preact.js"', "hooks.js").replace(
        SOURCE_MAP,
        "\n",
      ),
    },
    { path: "htm.js", body: htm.replace(SOURCE_MAP, "\n") },
    { path: "uplot.js", body: `${uplot}\nexport default uPlot;\n` },
    { path: "uplot.css", body: uplotCss },
  ];
}
