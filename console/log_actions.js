// The actions an attack-log record offers, only those that fit it: an ALAP exception for a
// request the engine decided, editing or disabling the custom rule that blocked it, and blocking
// the client address while no IP-list entry blocks it already (a warning and a confirmation
// first for a loopback, private or link-local address). An IP-list block offers none of these.
import { post, put } from "./api.js";
import {
  ConfirmButton,
  Done,
  ErrorBox,
  Link,
  ReadOnlyNote,
  useAction,
  useApi,
} from "./components.js";
import { t } from "./i18n.js";
import { html } from "./lib/ui.js";
import { can } from "./session.js";

/** Whether an IP-list entry blocks `r`'s address on its site now, on every path. */
function blocksNow(entry, r) {
  return entry.action === "block" && !entry.path_prefix &&
    (entry.site_id === null || entry.site_id === r.site_id) &&
    (!entry.expires_at || Date.parse(entry.expires_at) > Date.now());
}

function BlockAddress({ record, action }) {
  const lookup = useApi("/api/protection/ip-lists/lookup/" + encodeURIComponent(record.client_ip));
  // Without read:protection the list cannot be asked: the button is offered as before.
  const unknown = lookup.error?.status === 403;
  if (lookup.error && !unknown) return html`<${ErrorBox} error=${lookup.error} />`;
  if (!lookup.data && !unknown) return null;
  const holder = lookup.data?.entries.find((e) => blocksNow(e, record));
  if (holder) {
    return html`
      <p class="muted"
        id="already-blocked">${t("logs.already_blocked", {
          ip: record.client_ip,
          cidr: holder.cidr,
        })} <${Link} href=${`/console/ip-lists?edit=${encodeURIComponent(holder.id)}`}>${t(
          "logs.see_entry",
        )}</${Link}></p>
    `;
  }
  const block = () =>
    action.run(
      async () => {
        await post("/api/protection/ip-lists", {
          action: "block",
          cidr: record.client_ip,
          note: t("logs.block_note", { trace: record.trace_id }),
        });
        lookup.reload();
      },
      t("logs.blocked_done", { ip: record.client_ip }),
    );
  const label = t("logs.block_ip", { ip: record.client_ip });
  const scope = lookup.data?.scope ?? "public";
  if (scope === "public") {
    return html`
      <button type="button" id="block-ip" class="danger" disabled=${action.busy}
        onClick=${block}>${label}</button>
    `;
  }
  const warning = t("logs.local_warning_" + scope, { ip: record.client_ip });
  return html`
    <div class="warn-note notice" id="local-warning">
      <p>${warning}</p>
      <${ConfirmButton} id="block-ip" label=${label} question=${warning}
        disabled=${action.busy} onConfirm=${block} />
    </div>
  `;
}

function RuleActions({ rule, action }) {
  const r = rule.data;
  if (!r || !can("write:rules")) return null;
  const disable = () =>
    action.run(async () => {
      const { id: _id, created_at: _c, updated_at: _u, ...doc } = r;
      await put(`/api/rules/custom/${encodeURIComponent(r.id)}`, { ...doc, enabled: false });
      rule.reload();
    }, t("logs.rule_disabled", { name: r.name }));
  return html`
    <p>
      <${Link} href=${`/console/custom-rules?edit=${encodeURIComponent(r.id)}`}>${t(
        "logs.edit_rule",
      )}</${Link}>
        ${r.enabled
          ? html`
            <button type="button" id="disable-rule" class="secondary" disabled=${action.busy}
              onClick=${disable}>${t("logs.disable_rule")}</button>
          `
          : html`<span class="muted">${t("logs.rule_off")}</span>`}</p>
  `;
}

/** An engine finding decided (blocked or logged): an ALAP exception can stop it next time. */
const engineDecided = (r, entry) =>
  entry?.check === "engine" && r.finding !== null && r.finding.class !== "api_schema";

/** The actions for `record`, decided by `entry` (its chain's deciding entry) and its `rule`. */
export function RecordActions({ record, entry, rule }) {
  const action = useAction();
  const protect = can("write:protection");
  const ruleEditable = entry?.check === "custom_rule" && can("write:rules");
  if (!protect && !ruleEditable) {
    return html`<${ReadOnlyNote} permission="write:protection" />`;
  }
  const exception = () =>
    action.run(
      () => post("/api/alap/false-positives", { trace_id: record.trace_id }),
      t("logs.exception_done"),
    );
  // An IP-list block is the list's own doing: no exception, and the address is blocked already.
  const offerBlock = protect && entry?.check !== "ip_list";
  const offerException = protect && engineDecided(record, entry);
  if (!offerBlock && !offerException && !ruleEditable) return null;
  return html`
    <div class="panel" id="record-actions">
      ${offerBlock ? html`<${BlockAddress} record=${record} action=${action} />` : null}
      ${protect && engineDecided(record, entry)
        ? html`
          <p><button type="button" id="alap-exception" class="secondary"
                    disabled=${action.busy} onClick=${exception}>${t("logs.exception")}</button></p>
          <p class="hint">${t("logs.exception_hint")}</p>
        `
        : null}
      ${entry?.check === "custom_rule"
        ? html`<${RuleActions} rule=${rule} action=${action} />`
        : null}
      <${ErrorBox} error=${action.error} />
      <${Done} text=${action.done} />
    </div>
  `;
}
