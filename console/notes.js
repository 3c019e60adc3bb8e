// A notification's text in the console's language. The server stores each notification's reason
// as data (its kind and params) beside an English title and body: the catalogues' texts
// `note.<kind>[.<variant>].title` and `.body` are filled from the params (times in the console's
// format, numbers as the server wrote them); a kind the catalogues do not know shows the stored
// English text.
import { fmtTime, t, tOr } from "./i18n.js";

/** Params holding a time (ISO 8601), shown as a local date and time. */
const TIME = /(_at|^minute|^time)$/;

/** How long a decision lasts, from whole minutes (null: until revoked). */
export function duration(minutes) {
  if (minutes === null || minutes === undefined) return t("time.until_revoked");
  if (minutes < 120) return t("time.for_minutes", { n: minutes });
  if (minutes < 48 * 60) return t("time.for_hours", { n: Math.round(minutes / 60) });
  return t("time.for_days", { n: Math.round(minutes / 1440) });
}

/** Why ALAP proposed a decision, from its basis (`{kind, ...}`); `fallback` is the English text. */
export function decisionReason(basis, fallback) {
  if (!basis) return fallback;
  return tOr("alap.basis_" + basis.kind, fallback, {
    ...basis,
    rule: basis.rule_id,
    window: basis.window_seconds ?? basis.window_s,
  });
}

function vars(n) {
  const p = n.params ?? {};
  const out = {};
  for (const [k, v] of Object.entries(p)) {
    if (typeof v === "string" && TIME.test(k)) out[k] = fmtTime(v);
    else out[k] = v ?? "-";
  }
  if (n.kind.startsWith("alap.")) {
    out.duration = duration(p.minutes);
    out.reason = decisionReason(p.basis && { ...p, kind: p.basis }, "");
    out.where = p.site ? t("note.alap.on_site", { site: p.site }) : "";
  }
  return out;
}

/** The title and body of notification `n` in the console's language. */
export function noteText(n) {
  const p = n.params ?? {};
  const key = "note." + n.kind + (p.variant ? "." + p.variant : "");
  const v = vars(n);
  const title = tOr(key + ".title", n.title, v);
  let body = tOr(key + ".body", null, v);
  if (body === null) return { title, body: n.body };
  if (p.more > 0) body += " " + t("note.more", { n: p.more });
  return { title, body };
}
