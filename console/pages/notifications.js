// Notifications inbox: administrator notifications (token cleanup runs, ALAP proposals, ...),
// unread first if asked, each marked read with one click. Each reads in the console's language
// (notes.js) and, when it is about a console page, links there (opening it marks it read).
import { get, post } from "../api.js";
import { Badge, ErrorBox, Field, Link, Page, Table, useAction } from "../components.js";
import { fmtTime, t } from "../i18n.js";
import { noteText } from "../notes.js";
import { html, useEffect, useState } from "../lib/ui.js";
import { can } from "../session.js";

const LEVEL = { error: "bad", warning: "warn", warn: "warn", info: "info" };

export default function Notifications() {
  const [unread, setUnread] = useState(false);
  const [state, setState] = useState({ items: [], next: null, error: null });
  const action = useAction();
  const load = (cursor) =>
    get("/api/notifications", { unread, cursor, limit: 50 }).then(
      (r) =>
        setState((s) => ({
          items: cursor ? [...s.items, ...r.items] : r.items,
          next: r.next_cursor,
          error: null,
        })),
      (error) => setState((s) => ({ ...s, error })),
    );
  useEffect(() => {
    load(undefined);
  }, [unread]);
  const markRead = (n) =>
    action.run(async () => {
      await post(`/api/notifications/${n.id}/read`);
      load(undefined);
    });
  // Following a notification's link reads it; the page it opens does not wait for that.
  const opened = (n) => {
    if (!n.read && can("read:monitor")) post(`/api/notifications/${n.id}/read`).catch(() => {});
  };
  return html`
    <${Page} title=${t("nav.notifications")}>
      <${Field} id="only-unread" label=${t("notes.only_unread")} inline>
          <input type="checkbox" id="only-unread" checked=${unread} onChange=${(e) =>
            setUnread(e.target.checked)} />
        </${Field}>
        <${ErrorBox} error=${state.error ?? action.error} />
        <${Table} rows=${state.items} empty=${t("notes.empty")} columns=${[
          { label: t("logs.time"), value: (n) => fmtTime(n.time) },
          {
            label: t("notes.level"),
            value: (n) =>
              html`<${Badge} kind=${LEVEL[n.level] ?? "plain"}>${
                t("notes.level_" + n.level)
              }</${Badge}>`,
          },
          {
            label: t("notes.title"),
            value: (n) => {
              const { title, body } = noteText(n);
              return html`<div class="note" onClick=${() => opened(n)}>
                ${
                n.link
                  ? html`<${Link} href=${n.link} className="note-title">${title}</${Link}>`
                  : html`<strong class="note-title">${title}</strong>`
              }
                <p class="note-body">${body}</p>
              </div>`;
            },
          },
          {
            label: t("common.status"),
            value: (n) =>
              n.read
                ? t("notes.read")
                : html`<${Badge} kind="warn">${t("notes.unread")}</${Badge}>`,
          },
          {
            label: t("common.actions"),
            value: (n) =>
              !n.read && can("read:monitor")
                ? html`<button type="button" class="secondary small" onClick=${() => markRead(n)}>${
                  t("notes.mark_read")
                }</button>`
                : null,
          },
        ]} />
        ${state.next
          ? html`<button type="button" class="secondary" onClick=${() => load(state.next)}>${
            t("common.more")
          }</button>`
          : null}
      </${Page}>
  `;
}
