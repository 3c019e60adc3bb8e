// Notification channels: where notifications go besides the inbox (webhook, Slack, DingTalk,
// Feishu, WeCom, e-mail). List, create, edit, delete, send a test message and read each
// channel's deliveries with their attempts. Secrets (webhook URLs, signing secrets, SMTP
// passwords) are write-only: the API shows a masked URL and whether a secret is set, and an
// empty field on edit keeps the stored value.
import { del, post, put } from "../api.js";
import {
  Badge,
  ConfirmButton,
  Done,
  ErrorBox,
  Field,
  Loading,
  Page,
  ReadOnlyNote,
  Table,
  useAction,
  useApi,
} from "../components.js";
import { fmtTime, t } from "../i18n.js";
import { html, useState } from "../lib/ui.js";
import { can } from "../session.js";

const WRITE = "write:system";
const BASE = "/api/notification-channels";
/** Types whose webhook can be signed with a secret. */
const SIGNED = new Set(["webhook", "dingtalk", "feishu"]);
const STATUS = { delivered: "good", failed: "bad", pending: "warn" };

function initial(item) {
  const s = item?.settings ?? {};
  return {
    name: item?.name ?? "",
    type: item?.type ?? "webhook",
    enabled: item?.enabled ?? true,
    events: item?.events ?? [],
    url: "",
    secret: "",
    host: s.host ?? "",
    port: String(s.port ?? 587),
    security: s.security ?? "starttls",
    username: s.username ?? "",
    password: "",
    from: s.from ?? "",
    to: (s.to ?? []).join("\n"),
    ca: s.ca ?? "",
  };
}

/** The API document of the form's values (secrets only when typed). */
function toBody(v, isNew) {
  const settings = {};
  if (v.type === "email") {
    Object.assign(settings, {
      host: v.host.trim(),
      port: Number(v.port),
      security: v.security,
      from: v.from.trim(),
      to: v.to.split("\n").map((x) => x.trim()).filter(Boolean),
    });
    if (v.username.trim()) settings.username = v.username.trim();
    if (v.ca.trim()) settings.ca = v.ca;
    if (v.password) settings.password = v.password;
  } else {
    if (v.url.trim()) settings.url = v.url.trim();
    if (SIGNED.has(v.type) && v.secret) settings.secret = v.secret;
  }
  const body = { name: v.name.trim(), enabled: v.enabled, events: v.events, settings };
  return isNew ? { ...body, type: v.type } : body;
}

/** One text (or password) input of the channel form, with its label and hint. */
function TextField({ name, label, hint, type = "text", values, set }) {
  return html`
    <${Field} id=${"ch-" + name} label=${t(label)} hint=${hint}>
      <input id=${"ch-" + name} type=${type} value=${values[name]} onInput=${set(name)}
        spellcheck=${false}
        autocomplete=${type === "password" ? "new-password" : "off"}
        aria-describedby=${hint ? "ch-" + name + "-hint" : undefined} />
      </${Field}>
  `;
}

/** The events a channel is subscribed to, one checkbox each. */
function EventBoxes({ events, chosen, toggle }) {
  return html`
    <fieldset class="events">
      <legend>${t("channels.events")}</legend>
      ${events.map((kind) =>
        html`
          <${Field} id=${"ch-event-" + kind.replace(/\W/g, "-")} label=${t(
            "channels.event_" + kind.replace(/\W/g, "_"),
          )} inline>
            <input type="checkbox" id=${"ch-event-" + kind.replace(/\W/g, "-")}
              checked=${chosen.includes(kind)} onChange=${toggle(kind)} />
            </${Field}>
        `
      )}
    </fieldset>
  `;
}

/** An e-mail channel's SMTP settings; the stored password is kept unless one is typed. */
function EmailFields({ values, set, isNew, stored, keep }) {
  const text = (name, label, hint, type) =>
    html`
      <${TextField} name=${name} label=${label} hint=${hint} type=${type} values=${values}
        set=${set} />
    `;
  return html`
    ${text("host", "channels.host")} ${text("port", "channels.port")}
    <${Field} id="ch-security" label=${t("channels.security")}>
      <select id="ch-security" value=${values.security} onChange=${set("security")}>
        ${["starttls", "tls", "none"].map((x) =>
          html`<option value=${x} selected=${x === values.security}>${
            t("channels.security_" + x)
          }</option>`
        )}
      </select></${Field}>
    ${text("username", "channels.username")}
    ${text(
      "password",
      "channels.password",
      stored.password_set ? keep : isNew ? undefined : t("channels.not_set"),
      "password",
    )}
    ${text("from", "channels.from")}
    <${Field} id="ch-to" label=${t("channels.to")} hint=${t("channels.one_per_line")}>
      <textarea id="ch-to" rows="2" value=${values.to} onInput=${set(
        "to",
      )} spellcheck=${false}
        aria-describedby="ch-to-hint"></textarea></${Field}>
    <${Field} id="ch-ca" label=${t("channels.ca")} hint=${t("channels.ca_hint")}>
      <textarea id="ch-ca" rows="3" value=${values.ca} onInput=${set(
        "ca",
      )} spellcheck=${false}
        aria-describedby="ch-ca-hint"></textarea></${Field}>
  `;
}

/** A webhook channel's URL and, for the types that sign, its secret (both write-only). */
function WebhookFields({ values, set, isNew, stored, keep }) {
  return html`
    <${TextField} name="url" label="channels.url" type="password" values=${values} set=${set}
      hint=${isNew ? t("channels.url_hint_" + values.type) : `${keep} (${stored.url ?? "-"})`} />
    ${SIGNED.has(values.type)
      ? html`
        <${TextField} name="secret" label="channels.secret" type="password"
          values=${values} set=${set} hint=${isNew
            ? t("channels.secret_hint")
            : stored.secret_set
            ? keep
            : t("channels.not_set")} />
      `
      : null}
  `;
}

function ChannelForm({ item, types, events, readOnly, onSaved, onClose }) {
  const isNew = item === "new";
  const [v, setV] = useState(() => initial(isNew ? null : item));
  const action = useAction();
  const set = (k) => (e) =>
    setV((old) => ({
      ...old,
      [k]: e.target.type === "checkbox" ? e.target.checked : e.target.value,
    }));
  const toggle = (kind) => (e) =>
    setV((old) => ({
      ...old,
      events: e.target.checked ? [...old.events, kind] : old.events.filter((x) => x !== kind),
    }));
  const secrets = {
    values: v,
    set,
    isNew,
    stored: isNew ? {} : item.settings,
    keep: isNew ? undefined : t("channels.keep"),
  };
  const submit = (e) => {
    e.preventDefault();
    action.run(async () => {
      const body = toBody(v, isNew);
      if (isNew) await post(BASE, body);
      else await put(`${BASE}/${item.id}`, body);
      onSaved();
    });
  };
  return html`
    <div class="panel" id="channel-form">
      <h2>${isNew ? t("channels.new") : item.name}</h2>
      <form class="form" onSubmit=${submit} novalidate>
        <fieldset disabled=${readOnly || action.busy}>
          <${TextField} name="name" label="common.name" values=${v} set=${set} />
          <${Field} id="ch-type" label=${t("channels.type")}>
              <select id="ch-type" value=${v.type} disabled=${!isNew} onChange=${set("type")}>
                ${types.map((ty) =>
                  html`<option value=${ty} selected=${ty === v.type}>${
                    t("channels.type_" + ty)
                  }</option>`
                )}
              </select></${Field}>
            <${Field} id="ch-enabled" label=${t("common.enabled")} inline>
              <input type="checkbox" id="ch-enabled" checked=${v.enabled} onChange=${set(
                "enabled",
              )} />
              </${Field}>
            <${EventBoxes} events=${events} chosen=${v.events} toggle=${toggle} />
            ${v.type === "email"
              ? html`<${EmailFields} ...${secrets} />`
              : html`<${WebhookFields} ...${secrets} />`}
            ${readOnly
              ? null
              : html`<button type="submit" id="ch-save">${t("common.save")}</button>`}
          </fieldset>
          <button type="button" class="secondary" onClick=${onClose}>${t("common.close")}</button>
        </form>
        <${ErrorBox} error=${action.error} />
      </div>
  `;
}

function Deliveries({ channel, onClose }) {
  const list = useApi(`${BASE}/${channel.id}/deliveries`, { limit: 50 });
  return html`<div class="panel" id="deliveries">
    <h2>${t("channels.deliveries_of", { name: channel.name })}</h2>
    <div class="actions">
      <button type="button" class="secondary small" id="deliveries-refresh" onClick=${list.reload}>${
    t("common.refresh")
  }</button>
      <button type="button" class="secondary small" onClick=${onClose}>${t("common.close")}</button>
    </div>
    <${Loading} state=${list} />
    ${
    list.data
      ? html`<${Table} rows=${list.data.items} empty=${t("channels.no_deliveries")} columns=${[
        { label: t("common.created"), value: (d) => fmtTime(d.created_at) },
        { label: t("channels.event"), key: "event", className: "mono" },
        { label: t("notes.title"), key: "title" },
        {
          label: t("common.status"),
          value: (d) =>
            html`<${Badge} kind=${STATUS[d.status] ?? "plain"}>${
              t("channels.status_" + d.status)
            }</${Badge}>`,
        },
        {
          label: t("channels.attempts"),
          value: (d) =>
            d.attempts.map((a) =>
              html`<div class="attempt">${fmtTime(a.time)}: ${a.ok ? "OK" : a.error ?? "-"} ${
                a.status === null ? "" : `(HTTP ${a.status})`
              }</div>`
            ),
        },
      ]} />`
      : null
  }
  </div>`;
}

export default function Channels() {
  const list = useApi(BASE);
  const [editing, setEditing] = useState(null);
  const [showing, setShowing] = useState(null);
  const action = useAction();
  const writable = can(WRITE);
  const data = list.data;
  const test = (c) =>
    action.run(async () => {
      await post(`${BASE}/${c.id}/test`, {});
      setShowing(c);
    }, t("channels.test_queued", { name: c.name }));
  const remove = (c) =>
    action.run(async () => {
      await del(`${BASE}/${c.id}`);
      if (showing?.id === c.id) setShowing(null);
      list.reload();
    }, t("common.deleted"));
  const target = (c) =>
    c.type === "email" ? (c.settings.to ?? []).join(", ") : c.settings.url ?? "-";
  return html`<${Page} title=${t("nav.channels")}>
    <p class="muted">${t("channels.explain")}</p>
    ${writable ? null : html`<${ReadOnlyNote} permission=${WRITE} />`}
    <${ErrorBox} error=${action.error} />
    <${Done} text=${action.done} />
    ${
    editing && data
      ? html`
        <${ChannelForm} key=${editing === "new" ? "new" : editing.id} item=${editing}
          types=${data.types} events=${data.events} readOnly=${!writable}
          onClose=${() => setEditing(null)} onSaved=${() => {
            setEditing(null);
            list.reload();
          }} />
      `
      : writable
      ? html`<p><button type="button" class="new" onClick=${() => setEditing("new")}>
          ${t("channels.new")}</button></p>`
      : null
  }
    <${Loading} state=${list} />
    ${
    data
      ? html`<${Table} rows=${data.items} empty=${t("channels.empty")} columns=${[
        { label: t("common.name"), key: "name" },
        { label: t("channels.type"), value: (c) => t("channels.type_" + c.type) },
        { label: t("channels.target"), value: target, className: "mono wrap" },
        { label: t("channels.events"), value: (c) => c.events.join(", ") || "-" },
        {
          label: t("common.enabled"),
          value: (c) =>
            c.enabled
              ? html`<${Badge} kind="good">${t("common.yes")}</${Badge}>`
              : html`<${Badge}>${t("common.no")}</${Badge}>`,
        },
        {
          label: t("common.actions"),
          value: (c) =>
            html`<span class="row-actions">
              <button type="button" class="secondary small" onClick=${() => setEditing(c)}>
                ${writable ? t("common.edit") : t("common.view")}</button>
              ${
              writable
                ? html`<button type="button" class="secondary small test" onClick=${() =>
                  test(c)}>${t("channels.test")}</button>`
                : null
            }
              <button type="button" class="secondary small deliveries" onClick=${() =>
              setShowing(c)}>${t("channels.deliveries")}</button>
              ${
              writable
                ? html`
                  <${ConfirmButton} label=${t("common.delete")}
                    question=${t("common.confirm_delete", { name: c.name })}
                    onConfirm=${() => remove(c)} />
                `
                : null
            }
            </span>`,
        },
      ]} />`
      : null
  }
    ${
    showing
      ? html`
        <${Deliveries} key=${showing.id + action.done} channel=${showing}
          onClose=${() => setShowing(null)} />
      `
      : null
  }
  </${Page}>`;
}
