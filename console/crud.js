// A list of API documents with create, edit and delete, for the pages whose API is the common
// `GET/POST {base}`, `GET/PUT/DELETE {base}/{id}` shape. Without the write permission the list
// stays, the forms open read-only and the buttons that change something are not shown.
import { del, post, put } from "./api.js";
import {
  ConfirmButton,
  Done,
  ErrorBox,
  Loading,
  ReadOnlyNote,
  Table,
  useAction,
  useApi,
  usePrimaryAction,
} from "./components.js";
import { Form, isFieldError } from "./form.js";
import { t } from "./i18n.js";
import { can } from "./session.js";
import { html, useEffect, useLayoutEffect, useRef, useState } from "./lib/ui.js";

/**
 * Which item the form shows (`"new"`, an item, or none), with keyboard focus following the form:
 * into its first control when it opens, back to the button that opened it (or the page's
 * heading) when it closes, in the same task that draws or removes the form (a layout effect: see
 * PageView in app.js). `panel` and `newButton` are the refs of the form and the "new" button.
 */
function useEditing() {
  const [editing, setEditing] = useState(null);
  const panel = useRef(null);
  const newButton = useRef(null);
  const opener = useRef(null);
  const open = (item) => {
    opener.current ??= document.activeElement;
    setEditing(item);
  };
  useLayoutEffect(() => {
    if (editing) {
      panel.current?.querySelector(
        "input:not(:disabled), select:not(:disabled), textarea:not(:disabled), button",
      )?.focus();
    } else if (opener.current) {
      const back = opener.current.isConnected ? opener.current : newButton.current ?? pageTitle();
      opener.current = null;
      back?.focus();
    }
  }, [editing]);
  return { editing, open, close: () => setEditing(null), panel, newButton };
}

/** The buttons of one row: view or edit, delete (asked first), and the page's own. */
function RowActions({ item, writable, deletable, name, onOpen, onRemove, extra }) {
  return html`<span class="row-actions">
      <button type="button" class="secondary small" onClick=${() => onOpen(item)}>
        ${writable ? t("common.edit") : t("common.view")}
      </button>
      ${
    writable && deletable
      ? html`
        <${ConfirmButton} label=${t("common.delete")}
          question=${t("common.confirm_delete", { name: name(item) })}
          onConfirm=${() => onRemove(item)} />
      `
      : null
  }
      ${extra}
    </span>`;
}

/**
 * The form of a new or an existing item, read-only without the write permission; `error` is the
 * failed save, whose field problems the form shows beside its fields.
 */
function EditPanel({ edit, fields, editFields, name, newLabel, readOnly, busy, onSave, error }) {
  const { editing } = edit;
  const isNew = editing === "new";
  const shown = isNew
    ? fields
    : typeof editFields === "function"
    ? editFields(editing)
    : (editFields ?? fields);
  return html`
    <div class="panel" ref=${edit.panel}>
      <h2>${isNew ? (newLabel ?? t("common.new")) : name(editing)}</h2>
      <${Form} key=${isNew ? "new" : editing.id} fields=${shown}
        initial=${isNew ? {} : editing} readOnly=${readOnly}
        busy=${busy} onSubmit=${onSave} idPrefix="edit" error=${error}>
        <button type="button" class="secondary" onClick=${edit.close}>${t("common.close")}</button>
        </${Form}>
        </div>
  `;
}

/**
 * `base`: the API path; `write`: its write permission; `columns`: table columns; `fields`:
 * the form (see form.js); `name(item)`: how an item is named in questions; `rowActions(item,
 * reload)`: extra buttons per row; `prepare(doc, isNew)`: last change to a document before it is
 * sent; `editFields`: the form of an existing item (or a function of the item) when it differs;
 * `empty`: what an empty list says (the "new" button is offered beside it); `headAction`: false
 * when the list is one part of its page, whose header then does not carry its "new" button.
 */
export function Crud(
  {
    base,
    write,
    columns,
    fields,
    editFields,
    name,
    rowActions,
    prepare,
    query,
    newLabel,
    empty,
    deletable = true,
    headAction = true,
  },
) {
  const list = useApi(base, query);
  const edit = useEditing();
  const { editing } = edit;
  const action = useAction();
  const writable = can(write);
  const label = newLabel ?? t("common.new");
  const openNew = () => edit.open("new");
  const inHead = usePrimaryAction(
    writable && headAction ? { label, onClick: openNew, ref: edit.newButton } : null,
  );

  const save = (doc) =>
    action.run(async () => {
      const body = prepare ? prepare(doc, editing === "new") : doc;
      if (editing === "new") await post(base, body);
      else await put(`${base}/${editing.id}`, body);
      edit.close();
      list.reload();
    }, t("common.saved"));

  const remove = (item) =>
    action.run(async () => {
      await del(`${base}/${item.id}`);
      pageTitle()?.focus(); // the row and its button are going away
      list.reload();
    }, t("common.deleted"));

  // `?edit=<id>` (a link from an attack-log record) opens that item once the list is in.
  useEffect(() => {
    const url = new URL(location.href);
    const item = list.data?.items.find((i) => i.id === url.searchParams.get("edit"));
    if (!item) return;
    url.searchParams.delete("edit");
    history.replaceState(null, "", url.pathname + url.search);
    edit.open(item);
  }, [list.data]);

  const actions = (item) =>
    html`
      <${RowActions} item=${item} writable=${writable} deletable=${deletable} name=${name}
        onOpen=${edit.open} onRemove=${remove}
        extra=${rowActions ? rowActions(item, list.reload) : null} />
    `;

  return html`<div class="crud">
    ${writable ? null : html`<${ReadOnlyNote} permission=${write} />`}
    <${ErrorBox} error=${editing && isFieldError(action.error) ? null : action.error} />
    <${Done} text=${action.done} />
    ${
    editing
      ? html`
        <${EditPanel} edit=${edit} fields=${fields} editFields=${editFields} name=${name}
          newLabel=${newLabel} readOnly=${!writable} busy=${action.busy} onSave=${save}
          error=${action.error} />
      `
      : writable && !inHead
      ? html`<p><button type="button" class="new" ref=${edit.newButton} onClick=${openNew}>
          ${label}</button></p>`
      : null
  }
    <${Loading} state=${list} />
    ${
    list.data
      ? html`
        <${Table} columns=${[...columns, { label: t("common.actions"), value: actions }]}
          rows=${list.data.items} empty=${empty} emptyAction=${writable && !editing
            ? html`<button type="button" class="secondary" onClick=${openNew}>${label}</button>`
            : null} />
      `
      : null
  }
  </div>`;
}

/**
 * One settings document (`GET/PUT path`) edited as a form; `load(doc)` and `prepare(doc)`
 * convert between the API's shape and the form's where they differ.
 */
export function SettingForm({ path, write, fields, idPrefix = "setting", onSaved, load, prepare }) {
  const doc = useApi(path);
  const action = useAction();
  const writable = can(write);
  const save = (body) =>
    action.run(async () => {
      await put(path, prepare ? prepare(body) : body);
      doc.reload();
      onSaved?.();
    }, t("common.saved"));
  return html`<div class="setting">
    ${writable ? null : html`<${ReadOnlyNote} permission=${write} />`}
    <${Loading} state=${doc} />
    ${
    doc.data
      ? html`
        <${Form} key=${JSON.stringify(doc.data)} fields=${fields}
          initial=${load ? load(doc.data) : doc.data} readOnly=${!writable} busy=${action
            .busy} onSubmit=${save}
          idPrefix=${idPrefix} error=${action.error} />
      `
      : null
  }
    <${ErrorBox} error=${doc.data && isFieldError(action.error) ? null : action.error} />
    <${Done} text=${action.done} />
  </div>`;
}

const pageTitle = () => document.getElementById("page-title");
