// The dashboard's getting-started checklist: a few steps, each read from the real state (a site
// exists, the access log holds a blocked request, the user's 2FA is on, a notification channel
// exists) and each a link to where it is done. Shown to users who may create sites until every
// step is done or they dismiss it; the dismissal is the user's preference (`checklist_dismissed`,
// PUT /api/auth/session/preferences), so it stays dismissed on every browser.
import { ErrorBox, Link, useAction, useApi } from "../components.js";
import { t } from "../i18n.js";
import { html, useState } from "../lib/ui.js";
import { can, savePreferences, session } from "../session.js";

/** The steps whose state this user can read, each `{ id, done, href }`. */
function useSteps() {
  const sites = useApi(can("read:sites") ? "/api/sites" : null);
  const blocks = useApi(can("read:logs") ? "/api/logs" : null, { action: "block", limit: 1 });
  const channels = useApi(can("read:monitor") ? "/api/notification-channels" : null);
  const parts = [sites, blocks, channels];
  if (parts.some((p) => p.loading && p.data === undefined)) return null;
  const firstSite = sites.data?.items?.[0];
  const steps = [];
  if (sites.data) {
    steps.push({
      id: "site",
      done: sites.data.items.length > 0,
      href: firstSite ? "/console/sites" : "/console/sites/first",
    });
  }
  if (blocks.data) {
    steps.push({
      id: "blocked",
      done: blocks.data.items.length > 0,
      href: firstSite
        ? "/console/sites/first?site=" + encodeURIComponent(firstSite.id)
        : "/console/sites/first",
    });
  }
  steps.push({ id: "2fa", done: session().user.totp_enabled === true, href: "/console/account" });
  if (channels.data) {
    steps.push({ id: "channel", done: channels.data.items.length > 0, href: "/console/channels" });
  }
  return steps;
}

function Steps() {
  const steps = useSteps();
  const action = useAction();
  const [hidden, setHidden] = useState(false);
  if (steps === null || hidden || steps.every((s) => s.done)) return null;
  const done = steps.filter((s) => s.done).length;
  const dismiss = () =>
    action.run(async () => {
      await savePreferences({ checklist_dismissed: true });
      setHidden(true);
    });
  return html`
    <section class="panel checklist" id="checklist" aria-labelledby="checklist-title">
      <div class="checklist-head">
        <h2 id="checklist-title">${t("check.title")}</h2>
        <span class="muted" id="checklist-progress">${t("check.progress", {
          done,
          total: steps.length,
        })}</span>
      </div>
      <ol>${steps.map((s) =>
        html`
          <li class=${s.done ? "done-step" : "open-step"} id=${"check-" + s.id}>
            <span class="check-mark" aria-hidden="true">${s.done ? "\u2713" : "\u25cb"}</span>
            <${Link} href=${s.href}>${t("check." + s.id)}</${Link}>
                  <span class="sr-only">${s.done ? t("check.is_done") : t("check.is_open")}</span>
                  <span class="hint">${t("check." + s.id + "_hint")}</span>
                </li>
        `
      )}</ol>
      <button type="button" class="secondary small" id="checklist-dismiss" onClick=${dismiss}
        disabled=${action.busy}>${t("check.dismiss")}</button>
      <${ErrorBox} error=${action.error} />
    </section>
  `;
}

/** The checklist, for users who may create sites and have not dismissed it. */
export function Checklist() {
  const prefs = session().preferences ?? {};
  if (!can("write:sites") || prefs.checklist_dismissed) return null;
  return html`<${Steps} />`;
}
