// The AI assistant: the user's conversations, a question box, and the answer streamed as it
// arrives (text, tool activity, approval requests), from /api/ai/conversations. Changes the model
// proposes are only approval requests: they appear here and on the AI approvals page.
import { del, post, postEvents } from "../api.js";
import {
  Badge,
  ConfirmButton,
  ErrorBox,
  Field,
  Link,
  Loading,
  Page,
  useAction,
  useApi,
} from "../components.js";
import { fmtTime, t } from "../i18n.js";
import { html, useEffect, useState } from "../lib/ui.js";
import { can } from "../session.js";

/** One tool call as the transcript shows it. */
function ToolLine({ name, args, outcome }) {
  const failed = outcome && outcome.ok === false;
  return html`<li class="ai-tool">
    <code>${name}</code> <span class="muted mono wrap">${JSON.stringify(args ?? {})}</span>
    ${
    outcome
      ? html`
        <${Badge} kind=${failed ? "bad" : "good"}>${failed
          ? outcome.error.code
          : t("ai.tool_done")}</${Badge}>
      `
      : null
  }
  </li>`;
}

function ApprovalLine({ approval }) {
  return html`
    <li class="ai-approval">
      <${Badge} kind="warn">${t("ai.status_" + approval.status)}</${Badge}> ${approval.summary}
        ${can("approve:ai")
          ? html`
            <${Link} href="/console/ai-approvals">${t("ai.review")}</${Link}>
          `
          : html`
            <span class="muted">${t("ai.needs_approval")}</span>
          `}
      </li>
  `;
}

/** The stored messages: questions, answers and the tools the model called. */
function Transcript({ messages }) {
  return html`<ol class="ai-transcript" aria-label=${t("ai.transcript")}>
    ${
    messages.filter((m) => m.role !== "tool").map((m) =>
      html`<li key=${m.id} class=${"ai-msg " + m.role}>
        <p class="ai-who muted">${t("ai.role_" + m.role)} · ${fmtTime(m.created_at)}</p>
        ${m.content ? html`<p class="ai-text">${m.content}</p>` : null}
        ${
        m.tool_calls
          ? html`<ul class="ai-tools">${
            m.tool_calls.map((c) =>
              html`<${ToolLine} name=${c.function.name} args=${parse(c.function.arguments)} />`
            )
          }</ul>`
          : null
      }
      </li>`
    )
  }
  </ol>`;
}

function parse(text) {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The answer being streamed: the question, tool activity and the text so far. */
function Live({ live }) {
  return html`<div class="ai-live panel" aria-live="polite" aria-busy="true">
    <p class="ai-who muted">${t("ai.role_user")}</p>
    <p class="ai-text">${live.question}</p>
    <p class="ai-who muted">${t("ai.role_assistant")}</p>
    ${
    live.tools.length
      ? html`<ul class="ai-tools">${
        live.tools.map((x) =>
          html`<${ToolLine} key=${x.id} name=${x.name} args=${x.args} outcome=${x.outcome} />`
        )
      }</ul>`
      : null
  }
    <p class="ai-text" id="ai-answer">${live.text}</p>
  </div>`;
}

/** What the finished answer left besides its text: approval requests, usage, or the error. */
function Outcome({ live }) {
  return html`<div class="ai-outcome" role="status">
    ${
    live.approvals.length
      ? html`<ul class="ai-approvals">${
        live.approvals.map((a) => html`<${ApprovalLine} key=${a.id} approval=${a} />`)
      }</ul>`
      : null
  }
    ${
    live.usage
      ? html`<p class="muted">${
        t("ai.usage", {
          prompt: live.usage.prompt_tokens,
          completion: live.usage.completion_tokens,
        })
      }</p>`
      : null
  }
    ${
    live.error
      ? html`
        <div class="error-box" role="alert">
          <p class="error-message">${live.error.message}</p>
          <p class="error-meta"><span>${t("error.code")}: <code>${live.error.code}</code></span></p>
        </div>
      `
      : null
  }
  </div>`;
}

/**
 * Asks `content` in conversation `id` and follows the streamed answer, handing each new state of
 * it (text so far, tool calls and their outcomes, approval requests, usage or error) to `show`.
 */
async function streamAnswer(id, content, show) {
  const state = { question: content, text: "", tools: [], approvals: [], finished: false };
  show({ ...state });
  const update = (fn) => {
    fn(state);
    show({ ...state, tools: [...state.tools], approvals: [...state.approvals] });
  };
  await postEvents(`/api/ai/conversations/${id}/messages`, { content }, (type, data) => {
    if (type === "token") update((s) => (s.text += data.text));
    else if (type === "tool_call") {
      update((s) => s.tools.push({ id: data.id, name: data.name, args: data.arguments }));
    } else if (type === "tool_result") {
      update((s) => {
        const tool = s.tools.find((x) => x.id === data.id);
        if (tool) tool.outcome = data;
      });
    } else if (type === "approval") update((s) => s.approvals.push(data.approval));
    else if (type === "done") {
      update((s) => Object.assign(s, { finished: true, usage: data.usage }));
    } else if (type === "error") {
      update((s) => Object.assign(s, { finished: true, error: data }));
    }
  });
  update((s) => (s.finished = true));
}

/** The conversation chooser, or the note that there is none yet. */
function ConversationPicker({ items, current, onPick }) {
  return items.length
    ? html`
      <${Field} id="ai-conversation" label=${t("ai.conversation")}>
        <select id="ai-conversation" onChange=${(e) => onPick(e.target.value)}>
                  ${items.map((c) =>
                    html`<option value=${c.id} selected=${c.id === current}>${c.title} · ${
                      fmtTime(c.updated_at)
                    }</option>`
                  )}
                </select>
        </${Field}>
    `
    : html`<p class="muted empty">${t("ai.empty")}</p>`;
}

/** The question box and its send button (busy while an answer streams). */
function AskForm({ question, setQuestion, busy, onAsk }) {
  return html`
    <form class="form ai-ask" onSubmit=${onAsk}>
      <${Field} id="ai-question" label=${t("ai.question")} hint=${t("ai.question_hint")}>
        <textarea id="ai-question" rows="3" value=${question} maxlength="8000"
          aria-describedby="ai-question-hint"
          onInput=${(e) => setQuestion(e.target.value)}></textarea>
        </${Field}>
        <div class="actions">
          <button type="submit" id="ai-send" disabled=${busy || !question.trim()}>
          ${busy ? t("ai.answering") : t("ai.send")}</button>
        </div>
        </form>
  `;
}

export default function AiAssistant() {
  const list = useApi("/api/ai/conversations");
  const [current, setCurrent] = useState("");
  const conversation = useApi(current ? `/api/ai/conversations/${current}` : null);
  const [question, setQuestion] = useState("");
  const [live, setLive] = useState(null);
  const action = useAction();
  const items = list.data?.items ?? [];

  useEffect(() => {
    if (!current && items.length > 0) setCurrent(items[0].id);
  }, [items.length]);

  const start = () =>
    action.run(async () => {
      const made = await post("/api/ai/conversations", {});
      setLive(null);
      setCurrent(made.id);
      list.reload();
      return made;
    });

  const remove = () =>
    action.run(async () => {
      await del(`/api/ai/conversations/${current}`);
      setCurrent("");
      setLive(null);
      list.reload();
    });

  const ask = (e) => {
    e.preventDefault();
    const content = question.trim();
    if (!content) return;
    action.run(async () => {
      let id = current;
      if (!id) {
        id = (await post("/api/ai/conversations", {})).id;
        setCurrent(id);
      }
      setQuestion("");
      await streamAnswer(id, content, setLive);
      list.reload();
      conversation.reload();
    });
  };

  const pick = (id) => {
    setLive(null);
    setCurrent(id);
  };

  const actions = html`
    <button type="button" id="ai-new" class="secondary" disabled=${action.busy} onClick=${start}>
      ${t("ai.new")}</button>
    ${current
      ? html`
        <${ConfirmButton} id="ai-delete" label=${t("common.delete")}
          question=${t("ai.delete_question")} onConfirm=${remove} disabled=${action.busy} />
      `
      : null}
  `;
  const messages = conversation.data?.messages ?? [];
  return html`
    <${Page} title=${t("nav.ai-assistant")} actions=${actions}>
      <p class="muted">${t("ai.intro")}</p>
      <${Loading} state=${list} />
      <${ConversationPicker} items=${items} current=${current} onPick=${pick} />
      ${current && conversation.data ? html`<${Transcript} messages=${messages} />` : null}
      ${live && !live.finished ? html`<${Live} live=${live} />` : null}
      ${live && live.finished ? html`<${Outcome} live=${live} />` : null}
      <${AskForm} question=${question} setQuestion=${setQuestion} busy=${action.busy}
        onAsk=${ask} />
      <${ErrorBox} error=${action.error} />
    </${Page}>
  `;
}
