// Cluster: the nodes this controller manages (state, last heartbeat, version, policy, clock,
// counters; refreshed every 5 s), one-time join tokens (the token shown once with a copy button
// and the command that uses it), and revocation / removal of nodes. Read needs read:cluster,
// every change write:cluster. On a node the API answers CLUSTER_ROLE and the page says so.
import { del, post } from "../api.js";
import {
  Badge,
  ConfirmButton,
  CopyOnce,
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
import { fmtNumber, fmtTime, t } from "../i18n.js";
import { html, useEffect, useState } from "../lib/ui.js";
import { can } from "../session.js";

const STATE_KIND = {
  online: "good",
  enrolled: "plain",
  stale: "warn",
  offline: "bad",
  revoked: "bad",
};

/** A node's state as a coloured badge (also on the dashboard). */
export function NodeState({ state }) {
  return html`<${Badge} kind=${STATE_KIND[state] ?? "plain"}>${
    t("cluster.state." + state)
  }</${Badge}>`;
}

function NewToken({ token, onClose }) {
  return html`
    <div class="panel" role="status">
      <h2>${t("cluster.token_title")}</h2>
      <p>${t("cluster.token_once", { time: fmtTime(token.expires_at) })}</p>
      <${CopyOnce} id="join-token" value=${token.token} />
      <p class="muted">${t("cluster.token_use")}</p>
      <pre class="wrap">waf serve --join-token ${token.token}</pre>
      <p class="muted">${t("cluster.ca_fingerprint")}: <code>${token.ca_fingerprint}</code></p>
      <button type="button" class="secondary" onClick=${onClose}>${t("common.close")}</button>
    </div>
  `;
}

function CreateToken({ onCreated }) {
  const [note, setNote] = useState("");
  const [minutes, setMinutes] = useState("60");
  const action = useAction();
  const submit = (e) => {
    e.preventDefault();
    action.run(async () => {
      const r = await post("/api/cluster/join-tokens", {
        note,
        ttl_seconds: Math.round(Number(minutes) * 60),
      });
      setNote("");
      onCreated(r);
    });
  };
  return html`
    <form class="panel" id="join-token-form" onSubmit=${submit}>
      <h2>${t("cluster.new_token")}</h2>
      <${Field} id="join-token-note" label=${t("common.note")} hint=${t("cluster.note_hint")}>
        <input id="join-token-note" value=${note} onInput=${(e) => setNote(e.target.value)} />
        </${Field}>
        <${Field} id="join-token-minutes" label=${t("cluster.ttl")} hint=${t("cluster.ttl_hint")}>
          <input id="join-token-minutes" inputmode="numeric" value=${minutes}
            onInput=${(e) => setMinutes(e.target.value)} />
          </${Field}>
          <button type="submit" id="join-token-create" disabled=${action.busy}>${t(
            "cluster.create_token",
          )}</button>
          <${ErrorBox} error=${action.error} />
          </form>
  `;
}

function nodeColumns(writable, revoke, remove, limit) {
  return [
    {
      label: t("common.name"),
      value: (n) => html`<strong>${n.name}</strong><br /><code>${n.id}</code>`,
    },
    {
      label: t("common.status"),
      value: (n) => html`<${NodeState} state=${n.state} />`,
    },
    {
      label: t("cluster.last_heartbeat"),
      value: (n) => n.last_heartbeat_at ? fmtTime(n.last_heartbeat_at) : "-",
    },
    { label: t("cluster.version"), value: (n) => n.version ?? "-" },
    {
      label: t("cluster.policy"),
      value: (n) =>
        n.policy_version === null
          ? "-"
          : n.policy_current
          ? html`<${Badge} kind="good">${t("cluster.policy_current")}</${Badge}>`
          : html`<${Badge} kind="warn">${
            t("cluster.policy_behind", { s: Math.round((n.policy_lag_ms ?? 0) / 1000) })
          }</${Badge}>`,
    },
    {
      label: t("cluster.clock_skew"),
      value: (n) =>
        n.clock_skew_ms === null
          ? "-"
          : n.clock_skewed
          ? html`<${Badge} kind="warn"><span id=${"skew-" + n.id}>${
            t("cluster.clock_skewed", { ms: fmtNumber(Math.round(n.clock_skew_ms)), limit })
          }</span></${Badge}>`
          : `${Math.round(n.clock_skew_ms)} ms`,
    },
    {
      label: t("cluster.requests"),
      value: (n) =>
        n.totals ? `${fmtNumber(n.totals.requests ?? 0)} / ${fmtNumber(n.totals.block ?? 0)}` : "-",
    },
    {
      label: t("common.actions"),
      value: (n) =>
        !writable ? null : n.state === "revoked"
          ? html`
            <${ConfirmButton} id=${"remove-" + n.id} label=${t("cluster.remove")}
              question=${t("cluster.remove_question", { name: n.name })}
              onConfirm=${() => remove(n)} />
          `
          : html`
            <${ConfirmButton} id=${"revoke-" + n.id} label=${t("cluster.revoke")}
              question=${t("cluster.revoke_question", { name: n.name })}
              onConfirm=${() => revoke(n)} />
          `,
    },
  ];
}

export default function Cluster() {
  const nodes = useApi("/api/cluster/nodes");
  const tokens = useApi("/api/cluster/join-tokens");
  const [created, setCreated] = useState(null);
  const action = useAction();
  const writable = can("write:cluster");
  useEffect(() => {
    const timer = setInterval(() => (nodes.reload(), tokens.reload()), 5000);
    return () => clearInterval(timer);
  }, []);
  if (nodes.error?.code === "CLUSTER_ROLE") {
    return html`
      <${Page} title=${t("nav.cluster")}>
        <p class="notice" id="cluster-node-note">${t("cluster.is_node")}</p>
        </${Page}>
    `;
  }
  const revoke = (n) =>
    action.run(async () => {
      await post(`/api/cluster/nodes/${n.id}/revoke`, {});
      nodes.reload();
    }, t("cluster.revoked_done", { name: n.name }));
  const remove = (n) =>
    action.run(async () => {
      await del(`/api/cluster/nodes/${n.id}`);
      nodes.reload();
    }, t("cluster.removed_done", { name: n.name }));
  const withdraw = (tok) =>
    action.run(async () => {
      await del(`/api/cluster/join-tokens/${tok.id}`);
      tokens.reload();
    }, t("cluster.withdrawn_done"));
  return html`<${Page} title=${t("nav.cluster")}>
    <p class="muted">${t("cluster.intro")}</p>
    ${writable ? null : html`<${ReadOnlyNote} permission="write:cluster" />`}
    <${ErrorBox} error=${action.error} /><${Done} text=${action.done} />
    <h2>${t("cluster.nodes")}</h2>
    <${Loading} state=${nodes} />
    ${
    nodes.data
      ? html`
        ${nodes.data.items.length > 0
          ? html`<p id="cluster-totals">${
            t("cluster.totals", {
              requests: fmtNumber(nodes.data.totals.requests ?? 0),
              blocked: fmtNumber(nodes.data.totals.block ?? 0),
              challenged: fmtNumber(nodes.data.totals.challenge ?? 0),
            })
          }</p>`
          : null}
        <${Table} rows=${nodes.data.items} empty=${t("cluster.no_nodes")}
          columns=${nodeColumns(
            writable,
            revoke,
            remove,
            fmtNumber(nodes.data.clock_skew_limit_ms),
          )} />
      `
      : null
  }
    ${created ? html`<${NewToken} token=${created} onClose=${() => setCreated(null)} />` : null}
    ${
    writable ? html`<${CreateToken} onCreated=${(r) => (setCreated(r), tokens.reload())} />` : null
  }
    <h2>${t("cluster.open_tokens")}</h2>
    <${Loading} state=${tokens} />
    ${
    tokens.data
      ? html`<${Table} rows=${tokens.data.items} empty=${t("cluster.no_tokens")} columns=${[
        { label: t("cluster.node_id"), value: (x) => html`<code>${x.node_id}</code>` },
        { label: t("common.note"), key: "note" },
        { label: t("common.created"), value: (x) => fmtTime(x.created_at) },
        { label: t("cluster.expires"), value: (x) => fmtTime(x.expires_at) },
        {
          label: t("common.actions"),
          value: (x) =>
            writable
              ? html`
                <${ConfirmButton} id=${"withdraw-" + x.id} label=${t("cluster.withdraw")}
                  question=${t("cluster.withdraw_question")} onConfirm=${() => withdraw(x)} />
              `
              : null,
        },
      ]} />`
      : null
  }
  </${Page}>`;
}
