// Bot challenge policies: per site and path, challenge suspicious or all clients with a
// proof-of-work page, optionally letting verified search-engine bots through.
import { Page } from "../components.js";
import { Crud } from "../crud.js";
import { t } from "../i18n.js";
import { html } from "../lib/ui.js";

const MODES = ["suspicious", "all", "off"];

const FIELDS = [
  { name: "site_id", label: "common.site", type: "site" },
  { name: "path_prefix", label: "common.path_prefix", type: "text", default: "/" },
  {
    name: "mode",
    label: "bot.mode",
    type: "select",
    options: MODES.map((m) => ({ value: m, label: "bot.mode_" + m })),
  },
  {
    name: "rate_threshold.requests",
    label: "bot.rate_requests",
    type: "number",
    hint: "bot.rate_hint",
  },
  { name: "rate_threshold.window_seconds", label: "bot.rate_window", type: "number" },
  { name: "verified_bots", label: "bot.verified", type: "checkbox" },
  { name: "difficulty", label: "bot.difficulty", type: "number", hint: "bot.difficulty_hint" },
  { name: "clearance_minutes", label: "bot.clearance", type: "number" },
];

/** Without both threshold numbers there is no rate threshold. */
function prepare(doc) {
  const r = doc.rate_threshold;
  return r?.requests && r?.window_seconds ? doc : { ...doc, rate_threshold: null };
}

export default function BotPolicies() {
  return html`
    <${Page} title=${t("nav.bot-policies")}>
      <p class="muted">${t("bot.intro")}</p>
      <${Crud} empty=${t("bots.empty")} base="/api/protection/bot-policies" write="write:protection"
        fields=${FIELDS}
        prepare=${prepare} name=${(p) => p.path_prefix} newLabel=${t("bot.new")} columns=${[
          { label: t("common.path_prefix"), key: "path_prefix", className: "mono" },
          { label: t("bot.mode"), value: (p) => t("bot.mode_" + p.mode) },
          {
            label: t("bot.rate"),
            value: (p) =>
              p.rate_threshold
                ? `${p.rate_threshold.requests} / ${p.rate_threshold.window_seconds}s`
                : "-",
          },
          { label: t("bot.verified"), key: "verified_bots" },
          { label: t("bot.difficulty"), key: "difficulty" },
        ]} />
      </${Page}>
  `;
}
