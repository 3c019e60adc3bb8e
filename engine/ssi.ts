/**
 * Server-side include and edge-side include injection detector.
 *
 * SSI directives (`<!--#exec cmd=...-->`) and ESI tags (`<esi:include src=...>`) are
 * executed by the web server or the CDN that assembles the page; a value carrying one has
 * no other purpose.
 */
import type { DetectorInput, Finding } from "./types.ts";
import { makeFinding } from "./make_finding.ts";

const SSI_EXEC = /<!--\s*#\s*(?:exec|include|fsize|flastmod)\b/i;
const SSI_OTHER = /<!--\s*#\s*(?:echo|config|printenv|set|if|elif|else|endif)\b/i;
const ESI =
  /<esi:(?:include|vars|inline|choose|when|otherwise|try|attempt|except|remove|comment|debug|assign)\b/i;

/**
 * Reports SSI directives and ESI tags.
 *
 * @param value the decoded input
 * @returns the strongest finding, class `ssi`
 */
export function ssi(value: DetectorInput): Finding | undefined {
  const text = value.decoded;
  const lt = text.indexOf("<");
  if (lt < 0) return undefined;
  if (text.indexOf("<!--", lt) >= 0) {
    const exec = SSI_EXEC.exec(text);
    if (exec !== null) return makeFinding(value, "ssi", 95, "ssi.exec", text, exec.index);
    const other = SSI_OTHER.exec(text);
    if (other !== null) return makeFinding(value, "ssi", 88, "ssi.directive", text, other.index);
  }
  const esi = text.indexOf("esi:", lt) >= 0 ? ESI.exec(text) : null;
  return esi === null ? undefined : makeFinding(value, "ssi", 90, "ssi.esi", text, esi.index);
}
