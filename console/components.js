// Building blocks shared by the pages: data loading, the error box (message, code, trace id),
// page frame, tables, labelled fields, a confirmation dialog, a read-only notice and a list of
// permission identifiers.
import { get } from "./api.js";
import { t } from "./i18n.js";
import { html, useCallback, useEffect, useRef, useState } from "./lib/ui.js";

/** Loads `path` (with `query`) and reloads when either changes or `reload()` is called. */
export function useApi(path, query) {
  const key = path === null ? null : path + JSON.stringify(query ?? {});
  const [state, setState] = useState({ data: undefined, error: null, loading: key !== null });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    if (key === null) return;
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    get(path, query).then(
      (data) => live && setState({ data, error: null, loading: false }),
      (error) => live && setState({ data: undefined, error, loading: false }),
    );
    return () => {
      live = false;
    };
  }, [key, tick]);
  const reload = useCallback(() => setTick((n) => n + 1), []);
  return { ...state, reload };
}

/**
 * Runs an async action with a busy flag; a failure lands in `error` (shown by ErrorBox), a
 * success message in `done`.
 */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const [done, setDone] = useState("");
  const run = useCallback(async (fn, message = "") => {
    setBusy(true);
    setError(null);
    setDone("");
    try {
      const result = await fn();
      setDone(message);
      return result;
    } catch (err) {
      setError(err);
      return undefined;
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, done, run, setError, setDone };
}

/** The API's error as the user needs it: the message, the code and the trace id to quote. */
export function ErrorBox({ error }) {
  if (!error) return null;
  return html`
    <div class="error-box" role="alert">
      <p class="error-message">${error.message}</p>
      <p class="error-meta">
          <span>${t("error.code")}: <code>${error.code || "-"}</code></span>
          ${error.traceId
            ? html`<span>${t("error.trace")}: <code class="trace-id">${error.traceId}</code></span>`
            : null}
        </p>
    </div>
  `;
}

export function Done({ text }) {
  return text ? html`<p class="done" role="status">${text}</p>` : null;
}

/** A page: its heading (focused on navigation), actions, and content. */
export function Page({ title, actions, children }) {
  useEffect(() => {
    document.title = `${title} - waf`;
  }, [title]);
  return html`<section class="page">
    <div class="page-head">
      <h1 id="page-title" tabindex="-1">${title}</h1>
      ${actions ? html`<div class="actions">${actions}</div>` : null}
    </div>
    ${children}
  </section>`;
}

export function Loading({ state }) {
  if (state.error) return html`<${ErrorBox} error=${state.error} />`;
  if (state.loading && state.data === undefined) {
    return html`<p class="muted" role="status">${t("common.loading")}</p>`;
  }
  return null;
}

/**
 * A table: `columns` are {label, value(row) or key, className}; `rows` the items; an empty
 * list shows `empty`.
 */
export function Table({ columns, rows, empty, caption, rowKey = (r) => r.id }) {
  if (!rows || rows.length === 0) {
    return html`<p class="muted empty">${empty ?? t("common.none")}</p>`;
  }
  return html`
    <div class="table-wrap">
      <table>
        ${caption ? html`<caption>${caption}</caption>` : null}
        <thead><tr>${columns.map((c) => html`<th scope="col">${c.label}</th>`)}</tr></thead>
        <tbody>${rows.map((row, i) =>
          html`<tr key=${rowKey(row) ?? i}>${
            columns.map((c) =>
              html`<td class=${c.className ?? ""}>${
                c.value ? c.value(row) : display(row[c.key])
              }</td>`
            )
          }</tr>`
        )}</tbody>
      </table>
    </div>
  `;
}

function display(v) {
  if (v === null || v === undefined || v === "") return "-";
  if (Array.isArray(v)) return v.join(", ");
  if (typeof v === "boolean") return v ? t("common.yes") : t("common.no");
  return String(v);
}

/** A label and its control (`children` must carry `id`), with an optional hint. */
export function Field({ id, label, hint, children, inline }) {
  return html`<div class=${inline ? "field inline" : "field"}>
    ${inline ? children : null}
    <label for=${id}>${label}</label>
    ${inline ? null : children}
    ${hint ? html`<p class="hint" id=${id + "-hint"}>${hint}</p>` : null}
  </div>`;
}

/** Explains why write controls are missing. */
export function ReadOnlyNote({ permission }) {
  return html`<p class="notice readonly-note">${t("common.readonly", { permission })}</p>`;
}

/**
 * A button that asks first, in a modal dialog (keyboard: Escape cancels, focus stays inside).
 */
export function ConfirmButton({ label, question, onConfirm, danger = true, disabled, id }) {
  const dialog = useRef(null);
  const open = () => dialog.current?.showModal();
  const close = () => dialog.current?.close();
  return html`
    <span class="confirm">
      <button type="button" id=${id} class=${danger ? "danger" : ""} disabled=${disabled}
        onClick=${open}>${label}</button>
      <dialog ref=${dialog} aria-label=${question}>
        <p>${question}</p>
        <div class="actions">
          <button type="button" class="secondary" onClick=${close}>${t("common.cancel")}</button>
          <button type="button" class=${danger ? "danger" : ""} onClick=${() => {
            close();
            onConfirm();
          }}>${label}</button>
        </div>
      </dialog>
    </span>
  `;
}

/** A secret shown once: the value as code and a copy button (ids `<id>` and `copy-<id>`). */
export function CopyOnce({ id, value }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    await navigator.clipboard.writeText(value).catch(() => {});
    setCopied(true);
  };
  return html`<p><code id=${id} class="secret">${value}</code></p>
    <button type="button" id=${"copy-" + id} onClick=${copy}>${t("common.copy")}</button>
    ${copied ? html`<span class="done">${t("common.copied")}</span>` : null}`;
}

/** A small coloured label (`kind`: good, bad, warn or plain). */
export function Badge({ kind = "plain", children }) {
  return html`<span class=${"badge " + kind}>${children}</span>`;
}

/** An in-console link (handled by the shell's router). */
export function Link({ href, children, className }) {
  return html`<a href=${href} class=${className ?? ""}>${children}</a>`;
}

/** Identifiers as a list that wraps between them, never inside one (`perm-chips` in app.css). */
export function PermissionChips({ permissions, id }) {
  return html`<ul class="perm-chips" id=${id}>${
    permissions.map((p) => html`<li><code>${p}</code></li>`)
  }</ul>`;
}
