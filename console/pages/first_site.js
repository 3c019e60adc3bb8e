// The guided "protect your first site" flow (`/console/sites/first`, where the sign-in page lands
// while no site exists): the host visitors use, the upstream with a reachability check from the
// WAF's host, the mode and the level in one line each, then a one-click test request through
// the data plane that shows the block page and links its trace in the attack log.
// `?site=<id>` opens the test step of an existing site (the dashboard checklist links there).
import { get, post } from "../api.js";
import { Badge, ErrorBox, Field, Link, Page, ReadOnlyNote, useAction } from "../components.js";
import { FieldProblems, isFieldError, ProblemSummary, splitProblems } from "../form.js";
import { t } from "../i18n.js";
import { html, useEffect, useState } from "../lib/ui.js";
import { can } from "../session.js";

/** The fields the API may name, for showing its problems beside the flow's controls. */
const FIELDS = [
  { name: "hosts", label: "first.host", invalid: "sites.hosts_invalid" },
  { name: "upstreams", label: "first.upstream", invalid: "sites.upstreams_invalid" },
  { name: "name", label: "first.name", invalid: "sites.name_invalid" },
  { name: "mode", label: "first.mode" },
  { name: "level", label: "first.level" },
];
const MODES = ["block", "monitor"];
const LEVELS = ["", "low", "balanced", "strict"];
/** A site name from a host: what the name rule allows, at most 64 characters. */
const nameOf = (host) => host.replace(/^\*\./, "").replace(/[^A-Za-z0-9 ._-]/g, "-").slice(0, 64);

/** A text control of the flow with its hint and the API's problems beside it. */
function TextInput({ id, name, label, hint, value, onInput, split, placeholder }) {
  const texts = split.byField.get(name);
  const describedBy = [hint ? id + "-hint" : "", texts ? id + "-problems" : ""].filter(Boolean)
    .join(" ");
  return html`
    <${Field} id=${id} label=${label} hint=${hint}>
      <input id=${id} value=${value} spellcheck=${false} autocomplete="off"
        placeholder=${placeholder} aria-describedby=${describedBy || undefined}
        aria-invalid=${texts ? "true" : undefined} onInput=${(e) => onInput(e.target.value)} />
      <${FieldProblems} id=${id + "-problems"} texts=${texts} />
      </${Field}>
  `;
}

/** Choices as radio buttons, each with its one-line explanation. */
function Choices({ name, legend, options, value, onChange, label, line }) {
  return html`<fieldset class="choices" id=${"first-" + name}>
    <legend>${legend}</legend>
    ${
    options.map((o) =>
      html`
        <div class="choice">
          <input type="radio" name=${name} id=${`first-${name}-${o || "default"}`} value=${o}
            checked=${value === o} aria-describedby=${`first-${name}-${o || "default"}-line`}
            onChange=${() => onChange(o)} />
          <label for=${`first-${name}-${o || "default"}`}>${label(o)}</label>
          <p class="hint" id=${`first-${name}-${o || "default"}-line`}>${line(o)}</p>
        </div>
      `
    )
  }
  </fieldset>`;
}

/** What the upstream check said, in the user's language. */
function CheckResult({ result }) {
  if (!result) return null;
  if (result.reachable) {
    return html`
      <p class="check-result" id="first-check-result" role="status">
        <${Badge} kind="good">${t("first.reachable")}</${Badge}> ${t("first.reachable_detail", {
          status: result.status,
          ms: result.ms,
        })}</p>
    `;
  }
  const why = result.step === "policy"
    ? t("first.own_listener")
    : t("first.unreachable_" + result.step, { reason: result.reason });
  return html`
    <p class="check-result" id="first-check-result" role="status">
      <${Badge} kind="bad">${t("first.unreachable")}</${Badge}> ${why}</p>
  `;
}

/** Steps 1-3: the form that creates the site. */
function CreateSite({ onCreated }) {
  const [host, setHost] = useState("");
  const [name, setName] = useState("");
  const [named, setNamed] = useState(false);
  const [upstream, setUpstream] = useState("");
  const [mode, setMode] = useState("block");
  const [level, setLevel] = useState("");
  const [check, setCheck] = useState(null);
  const checking = useAction();
  const create = useAction();
  const split = splitProblems(FIELDS, create.error);
  const [edited, setEdited] = useState(() => new Set());
  useEffect(() => setEdited(new Set()), [create.error, checking.error]);
  const probe = () =>
    checking.run(async () => {
      setCheck(null);
      setCheck(await post("/api/onboarding/upstream-check", { upstream: upstream.trim() }));
    });
  const submit = (e) => {
    e.preventDefault();
    create.run(async () => {
      const body = {
        name: (named ? name : nameOf(host.trim())) || "site",
        hosts: [host.trim()],
        upstreams: [upstream.trim()],
        mode,
      };
      if (level) body.level = level;
      onCreated(await post("/api/sites", body));
    });
  };
  // The check's own problems (its field is `upstream`) show under the upstream too; a field
  // edited since the last answer shows none.
  const checkSplit = splitProblems([{ name: "upstream", label: "first.upstream" }], checking.error);
  const shown = {
    byField: new Map(
      [...split.byField, ...[...checkSplit.byField].map(([, v]) => ["upstreams", v])]
        .filter(([name]) => !edited.has(name)),
    ),
  };
  const edit = (name, set) => (v) => {
    set(v);
    if (!edited.has(name)) setEdited((old) => new Set(old).add(name));
  };
  return html`
    <form id="first-site-form" class="form" onSubmit=${submit} novalidate>
      <${ProblemSummary} fields=${FIELDS} error=${create.error} split=${split} />
      <${ErrorBox} error=${isFieldError(create.error) ? null : create.error} />
      <section class="step" aria-labelledby="first-step-1">
        <h2 id="first-step-1">${t("first.step_host")}</h2>
        <${TextInput} id="first-host" name="hosts" label=${t("first.host")}
          hint=${t("first.host_hint")} value=${host} split=${shown} placeholder="shop.example.com"
          onInput=${edit("hosts", setHost)} />
        <${TextInput} id="first-name" name="name" label=${t("first.name")}
          hint=${t("first.name_hint")} value=${named ? name : nameOf(host)} split=${shown}
          onInput=${edit("name", (v) => (setName(v), setNamed(true)))} />
      </section>
      <section class="step" aria-labelledby="first-step-2">
        <h2 id="first-step-2">${t("first.step_upstream")}</h2>
        <${TextInput} id="first-upstream" name="upstreams" label=${t("first.upstream")}
          hint=${t("first.upstream_hint")} value=${upstream} split=${shown}
          placeholder="http://127.0.0.1:3000" onInput=${edit(
            "upstreams",
            (v) => (setUpstream(v), setCheck(null)),
          )} />
        <p><button type="button" class="secondary" id="first-check" onClick=${probe}
            disabled=${checking.busy || upstream.trim() === ""}>${checking.busy
              ? t("first.checking")
              : t("first.check")}</button></p>
        <${CheckResult} result=${check} />
        <${ErrorBox} error=${isFieldError(checking.error) ? null : checking.error} />
      </section>
      <section class="step" aria-labelledby="first-step-3">
        <h2 id="first-step-3">${t("first.step_protect")}</h2>
        <${Choices} name="mode" legend=${t("first.mode")} options=${MODES} value=${mode}
          onChange=${setMode} label=${(m) => t("sites.mode_" + m)}
          line=${(m) => t("first.mode_line_" + m)} />
        <${Choices} name="level" legend=${t("first.level")} options=${LEVELS} value=${level}
          onChange=${setLevel} label=${(l) => t(l ? "sites.level_" + l : "sites.level_default")}
          line=${(l) => t("first.level_line_" + (l || "default"))} />
        <${FieldProblems} id="first-protect-problems"
          texts=${[...(split.byField.get("mode") ?? []), ...(split.byField.get("level") ?? [])]} />
      </section>
      <button type="submit" id="first-create" disabled=${create.busy}>${t("first.create")}</button>
    </form>
  `;
}

/** Step 4: the test request and what it showed. */
function TryIt({ site }) {
  const action = useAction();
  const [result, setResult] = useState(null);
  const [copied, setCopied] = useState(false);
  const send = () =>
    action.run(async () => {
      setResult(null);
      setResult(await post("/api/onboarding/test-request", { site_id: site.id }));
    });
  const copy = async () => {
    await navigator.clipboard.writeText(result.curl).catch(() => {});
    setCopied(true);
  };
  return html`<section class="step" id="first-try" aria-labelledby="first-step-4">
    <h2 id="first-step-4">${t("first.step_try")}</h2>
    <p>${t("first.try_intro", { name: site.name, host: site.hosts[0] })}</p>
    <p><button type="button" id="first-test" onClick=${send} disabled=${action.busy}>${
    action.busy ? t("first.sending") : t("first.send")
  }</button></p>
    <${ErrorBox} error=${action.error} />
    ${
    result
      ? html`<div id="first-test-result">
        <p role="status">${
        result.blocked
          ? html`<${Badge} kind="good">${t("first.blocked", { status: result.status })}</${Badge}>
            ${" "}${t("first.blocked_detail")}`
          : html`<${Badge} kind="warn">${
            t("first.not_blocked", { status: result.status })
          }</${Badge}>
            ${" "}${t("first.not_blocked_" + (result.action ?? "none"))}`
      }</p>
        <dl class="facts">
          <dt>${t("first.request")}</dt>
          <dd><code id="first-request">${result.method} ${result.path}</code> (Host: <code>${result.host}</code>)</dd>
          <dt>${t("dash.trace")}</dt>
          <dd>${
        result.trace_id
          ? html`<code class="trace-id" id="first-trace">${result.trace_id}</code>${" "}
            ${
            can("read:logs")
              ? html`
                <${Link} href=${"/console/logs/" + result.trace_id}
                  className="first-log-link">${t("first.open_log")}</${Link}>
              `
              : null
          }`
          : "-"
      }</dd>
          <dt>${t("first.curl")}</dt>
          <dd><code id="first-curl" class="wrap">${result.curl}</code>${" "}
            <button type="button" class="secondary small" id="first-curl-copy" onClick=${copy}>${
        t("common.copy")
      }</button>${
        copied
          ? html`
            <span class="done">${t("common.copied")}</span>
          `
          : null
      }</dd>
        </dl>
        ${
        result.page_id
          ? html`
            <h3>${t("first.block_page")}</h3>
            <iframe class="preview" id="first-block-page" sandbox=""
              src=${"/api/onboarding/pages/" + result.page_id} title=${t(
                "first.block_page",
              )}></iframe>
          `
          : null
      }
        <p><${Link} href="/console">${t("first.done")}</${Link}></p>
      </div>`
      : null
  }
  </section>`;
}

export function FirstSite() {
  const wanted = new URLSearchParams(location.search).get("site");
  const [site, setSite] = useState(null);
  const [missing, setMissing] = useState(false);
  useEffect(() => {
    if (!wanted) return;
    let live = true;
    get(`/api/sites/${encodeURIComponent(wanted)}`).then(
      (s) => live && setSite(s.item ?? s),
      () => live && setMissing(true),
    );
    return () => {
      live = false;
    };
  }, [wanted]);
  const writable = can("write:sites");
  return html`<${Page} title=${t("first.title")} description=${t("first.intro")}>
    ${writable ? null : html`<${ReadOnlyNote} permission="write:sites" />`}
    ${missing ? html`<p class="notice warn-note">${t("first.no_such_site")}</p>` : null}
    ${
    writable && !site && !wanted
      ? html`<${CreateSite} onCreated=${(s) => {
        setSite(s);
        history.replaceState(null, "", "/console/sites/first?site=" + encodeURIComponent(s.id));
      }} />`
      : null
  }
    ${
    site
      ? html`<p class="done" id="first-created" role="status">${
        t("first.created", { name: site.name, host: site.hosts[0] })
      }</p>
        ${writable ? html`<${TryIt} site=${site} />` : null}`
      : null
  }
    ${
    site ? null : html`
      <p class="muted">
        <${Link} href="/console">${t("first.skip")}</${Link}></p>
    `
  }
  </${Page}>`;
}
