// Building blocks shared by the pages: data loading, the error box (message, code, trace id),
// page frame (header with description and primary action), empty states, tables, labelled
// fields, a confirmation dialog, a read-only notice and a list of permission identifiers.
import { get } from "./api.js";
import { t, tOr } from "./i18n.js";
import {
  createContext,
  html,
  useCallback,
  useContext,
  useEffect,
  useRef,
  useState,
} from "./lib/ui.js";
import { route } from "./pages.js";

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

/** Where a list inside a page puts its "new" button: the page's header (usePrimaryAction). */
const PrimarySlot = createContext(null);

/**
 * A page: its header (the heading, focused on navigation; a one-line description, by default
 * the catalogue's `page.<id>` for the page the address names; the primary action on the right)
 * and its content. `actions` are the page's own header controls; a list inside registers its
 * "new" button there with usePrimaryAction.
 */
export function Page({ title, description, actions, children }) {
  const [primary, setPrimary] = useState(null);
  useEffect(() => {
    document.title = `${title} - waf`;
  }, [title]);
  const at = route(location.pathname);
  const desc = description ?? (at.detail ? "" : tOr("page." + at.id, ""));
  return html`
    <section class="page">
      <header class="page-head">
          <div class="page-title">
            <h1 id="page-title" tabindex="-1">${title}</h1>
            ${desc ? html`<p class="page-desc" id="page-desc">${desc}</p>` : null}
          </div>
          ${actions || primary
            ? html`<div class="actions">${actions}${
              primary
                ? html`
                  <button type="button" class="new" id="primary-action" ref=${primary.ref}
                    onClick=${primary.run}>${primary.label}</button>
                `
                : null
            }</div>`
            : null}
        </header>
      <${PrimarySlot.Provider} value=${setPrimary}>${children}</${PrimarySlot.Provider}>
      </section>
  `;
}

/**
 * Shows `action` ({label, onClick, ref}, or null for none) as the primary button of the page
 * this component is in; true when a page shows it (else the caller draws its own button).
 */
export function usePrimaryAction(action) {
  const set = useContext(PrimarySlot);
  const latest = useRef(action);
  latest.current = action;
  const shown = action !== null;
  const label = action?.label;
  useEffect(() => {
    if (!set || !shown) return;
    set({ label, ref: latest.current.ref, run: () => latest.current?.onClick() });
    return () => set(null);
  }, [set, shown, label]);
  return set !== null && shown;
}

/** An empty list: what is missing and, where there is one, the action that fills it. */
export function EmptyState({ text, action }) {
  return html`<div class="empty empty-state" role="status">
    <p>${text}</p>
    ${action ? html`<div class="empty-action">${action}</div>` : null}
  </div>`;
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
 * list shows `empty` (a text) with `emptyAction` (what to do next) as an EmptyState.
 */
export function Table({ columns, rows, empty, emptyAction, caption, rowKey = (r) => r.id }) {
  if (!rows || rows.length === 0) {
    return html`<${EmptyState} text=${empty ?? t("common.none")} action=${emptyAction} />`;
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

/** A single value that may be long: cut with an ellipsis, whole in the tooltip. */
export function Clip({ text }) {
  return html`<span class="clip" title=${text}>${text}</span>`;
}

/** A small coloured label (`kind`: good, bad, warn, info or plain). */
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
