/**
 * Accessibility checks run in a real chromium page: accessible names from chromium's own
 * accessibility tree, WCAG AA text contrast computed from computed styles, and a walk with the
 * Tab key that must reach every control and show a visible focus indicator on each.
 */
import type { Page } from "playwright-core";

/** Roles a user operates or must be told about: each needs a non-empty accessible name. */
const NAMED_ROLES = new Set([
  "button",
  "link",
  "textbox",
  "searchbox",
  "combobox",
  "listbox",
  "checkbox",
  "radio",
  "switch",
  "spinbutton",
  "slider",
  "menuitem",
  "tab",
  "Iframe",
  "image",
  "dialog",
  "alertdialog",
]);

interface AxNode {
  ignored: boolean;
  role?: { value?: string };
  name?: { value?: string };
  backendDOMNodeId?: number;
}

/**
 * Controls, links, frames, images and open dialogs in the page whose accessible name (as
 * chromium computes it: label, aria-label, aria-labelledby, text, title, alt) is empty.
 */
export async function unnamed(page: Page): Promise<string[]> {
  const cdp = await page.context().newCDPSession(page);
  try {
    const { nodes } = await cdp.send("Accessibility.getFullAXTree") as { nodes: AxNode[] };
    const missing: string[] = [];
    for (const node of nodes) {
      const role = node.role?.value ?? "";
      if (node.ignored || !NAMED_ROLES.has(role)) continue;
      if ((node.name?.value ?? "").trim() !== "") continue;
      let what = "?";
      if (node.backendDOMNodeId !== undefined) {
        const { node: dom } = await cdp.send("DOM.describeNode", {
          backendNodeId: node.backendDOMNodeId,
        }) as { node: { localName: string; attributes?: string[] } };
        const attrs = dom.attributes ?? [];
        const pairs = [];
        for (let i = 0; i < attrs.length; i += 2) pairs.push(`${attrs[i]}="${attrs[i + 1]}"`);
        what = `<${dom.localName} ${pairs.join(" ")}>`;
      }
      missing.push(`${role} ${what}`);
    }
    return missing;
  } finally {
    await cdp.detach();
  }
}

/** What a contrast sweep saw: failures, and how many text elements of each kind it checked. */
export interface ContrastReport {
  failures: string[];
  checked: Record<"text" | "link" | "button" | "muted" | "error" | "field", number>;
}

/**
 * Shared by the contrast sweep and the focus walk (run in the page): colour parsing, WCAG
 * relative luminance and contrast ratio, and the colour behind an element (its own and its
 * ancestors' backgrounds composited over the page's canvas, which a dark scheme makes dark).
 */
const COLOUR = `
  const parse = (c) => {
    const m = /rgba?\\(([^)]+)\\)/.exec(c || "");
    if (!m) return null;
    const p = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(Number);
    return { r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1 };
  };
  const over = (top, bottom) => ({
    r: top.r * top.a + bottom.r * (1 - top.a),
    g: top.g * top.a + bottom.g * (1 - top.a),
    b: top.b * top.a + bottom.b * (1 - top.a),
    a: 1,
  });
  const lum = (c) => {
    const f = (v) => {
      const s = v / 255;
      return s <= 0.03928 ? s / 12.92 : Math.pow((s + 0.055) / 1.055, 2.4);
    };
    return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b);
  };
  const ratio = (a, b) => {
    const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
    return (x + 0.05) / (y + 0.05);
  };
  const hex = (c) => "#" + [c.r, c.g, c.b].map((v) => Math.round(v).toString(16).padStart(2, "0")).join("");
  // The page's canvas under everything: white, or dark under a dark colour scheme.
  const canvas = () => {
    const probe = document.createElement("div");
    probe.style.backgroundColor = "Canvas";
    document.documentElement.append(probe);
    const c = parse(getComputedStyle(probe).backgroundColor);
    probe.remove();
    return c && c.a === 1 ? c : { r: 255, g: 255, b: 255, a: 1 };
  };
  // The colour behind el's content, or null when a background image makes it unknowable.
  const behind = (el) => {
    const layers = [];
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
      const s = getComputedStyle(e);
      if (s.backgroundImage && s.backgroundImage !== "none") return null;
      const c = parse(s.backgroundColor);
      if (c && c.a > 0) {
        layers.push(c);
        if (c.a >= 1) break;
      }
    }
    let colour = canvas();
    for (const layer of layers.reverse()) colour = over(layer, colour);
    return colour;
  };
  const opacity = (el) => {
    let o = 1;
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
      o *= Number(getComputedStyle(e).opacity);
    }
    return o;
  };
  const describe = (el) => {
    const id = el.id ? "#" + el.id : "";
    const cls = typeof el.className === "string" && el.className
      ? "." + el.className.trim().split(/\\s+/).join(".")
      : "";
    const text = (el.innerText || el.value || el.getAttribute("aria-label") || "").trim().slice(0, 40);
    return el.localName + id + cls + (text ? ' "' + text + '"' : "");
  };
`;

/**
 * Every piece of visible text (and every text field's value or placeholder) against the colour
 * behind it: at least 4.5:1, or 3:1 for large text (24 px, or 18.66 px bold). Disabled controls
 * are exempt (WCAG 1.4.3), visually hidden text (clipped, off-screen) is skipped.
 */
const CONTRAST = `(() => {
  ${COLOUR}
  const failures = [];
  const checked = { text: 0, link: 0, button: 0, muted: 0, error: 0, field: 0 };
  const hidden = (el) => {
    if (!el.checkVisibility({ visibilityProperty: true, opacityProperty: true })) return true;
    const r = el.getBoundingClientRect();
    if (r.width < 2 || r.height < 2) return true;
    if (r.right + scrollX <= 0 || r.bottom + scrollY <= 0) return true; // moved off the page
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
      const s = getComputedStyle(e);
      if (s.clip && s.clip !== "auto") return true;
      if (e.localName === "option") return true;
    }
    return false;
  };
  const disabled = (el) => !!el.closest(":disabled, [aria-disabled=true]");
  const kind = (el) => {
    if (el.closest(".error-box, .error, [role=alert]")) return "error";
    if (el.closest("a[href]")) return "link";
    if (el.closest("button")) return "button";
    if (el.closest("input, select, textarea")) return "field";
    if (el.closest(".muted, .hint, .nav-title, .label, .error-meta")) return "muted";
    return "text";
  };
  const check = (el, colour, what) => {
    const bg = behind(el);
    if (!bg) return;
    const s = getComputedStyle(el);
    let fg = parse(colour);
    if (!fg) return;
    fg = over({ ...fg, a: fg.a * opacity(el) }, bg);
    const size = parseFloat(s.fontSize);
    const bold = Number(s.fontWeight) >= 700;
    const need = size >= 24 || (size >= 18.66 && bold) ? 3 : 4.5;
    const r = ratio(fg, bg);
    checked[kind(el)]++;
    if (r < need) {
      failures.push(describe(el) + (what ? " (" + what + ")" : "") + ": " + hex(fg) + " on " +
        hex(bg) + " = " + r.toFixed(2) + ":1, needs " + need + ":1");
    }
  };
  const seen = new Set();
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!el || seen.has(el) || !n.textContent.trim()) continue;
    seen.add(el);
    if (el.closest("script, style, noscript, canvas, svg, iframe")) continue;
    if (hidden(el) || disabled(el)) continue;
    check(el, getComputedStyle(el).color, "");
  }
  for (const el of document.querySelectorAll("input, select, textarea")) {
    if (el.type === "hidden" || el.type === "checkbox" || el.type === "radio") continue;
    if (hidden(el) || disabled(el)) continue;
    if (el.value) check(el, getComputedStyle(el).color, "value");
    else if (el.placeholder) {
      check(el, getComputedStyle(el, "::placeholder").color, "placeholder");
    }
  }
  return { failures, checked };
})()`;

export function contrast(page: Page): Promise<ContrastReport> {
  return page.evaluate(CONTRAST) as Promise<ContrastReport>;
}

/** The lowest contrast of one group of elements: the ratio, an example's text, how many. */
export interface GroupContrast {
  ratio: number;
  text: string;
  count: number;
}

/**
 * For each group (a name and a selector), the lowest contrast ratio of its visible elements' text
 * against the colour behind them (two decimals), for reporting figures and asserting a floor.
 */
const GROUP_CONTRAST = (groups: Record<string, string>) =>
  `(() => {
  ${COLOUR}
  const out = {};
  for (const [group, selector] of Object.entries(${JSON.stringify(groups)})) {
    for (const el of document.querySelectorAll(selector)) {
      if (!el.textContent.trim() || el.getClientRects().length === 0) continue;
      const bg = behind(el);
      const fg = parse(getComputedStyle(el).color);
      if (!bg || !fg) continue;
      const r = Math.round(ratio(over({ ...fg, a: fg.a * opacity(el) }, bg), bg) * 100) / 100;
      const seen = out[group];
      if (!seen || r < seen.ratio) {
        out[group] = { ratio: r, text: el.textContent.trim().slice(0, 40), count: (seen?.count ?? 0) + 1 };
      } else seen.count++;
    }
  }
  return out;
})()`;

export function contrastByGroup(
  page: Page,
  groups: Record<string, string>,
): Promise<Record<string, GroupContrast>> {
  return page.evaluate(GROUP_CONTRAST(groups)) as Promise<Record<string, GroupContrast>>;
}

/** The controls a keyboard user must be able to reach, tagged in the page (returns the count). */
const TAG = `(() => {
  let n = 0;
  const radios = new Map();
  for (const el of document.querySelectorAll("[data-kbd]")) el.removeAttribute("data-kbd");
  const candidates = document.querySelectorAll(
    "a[href], button, input, select, textarea, summary, [tabindex], [contenteditable=true]",
  );
  for (const el of candidates) {
    if (el.type === "hidden" || el.disabled || el.closest("[inert], iframe")) continue;
    if (el.getAttribute("tabindex") === "-1") continue;
    if (!el.checkVisibility({ visibilityProperty: true })) continue;
    if (el.closest("dialog:not([open])")) continue;
    if (el.type === "radio" && el.name) {
      // A radio group is one tab stop (the arrow keys move inside it).
      if (!radios.has(el.name)) radios.set(el.name, "k" + n++);
      el.setAttribute("data-kbd", radios.get(el.name));
      continue;
    }
    el.setAttribute("data-kbd", "k" + n++);
  }
  const positive = [...document.querySelectorAll("[tabindex]")].filter((e) => e.tabIndex > 0);
  return { count: n, positive: positive.map((e) => e.outerHTML.slice(0, 100)) };
})()`;

/**
 * The focused element: its tag (if tagged), a description, and whether its focus indicator is
 * visible: an outline (or box-shadow ring) at least 2 px wide whose colour has 3:1 against the
 * colour around the element (WCAG 1.4.11 and 2.4.7).
 */
const FOCUSED = `(() => {
  ${COLOUR}
  const el = document.activeElement;
  if (!el || el === document.body) return { tag: null, what: "body", ring: "" };
  const s = getComputedStyle(el);
  let ring = "";
  const width = parseFloat(s.outlineWidth) || 0;
  // What the ring is painted on: the topmost other element just outside the element's left
  // (or right) edge, where the outline sits.
  const r = el.getBoundingClientRect();
  const gap = (parseFloat(s.outlineOffset) || 0) + width / 2;
  const x = r.left - gap >= 0 ? r.left - gap : r.right + gap;
  const under = document.elementsFromPoint(x, r.top + r.height / 2)
    .find((e) => e !== el && !el.contains(e));
  const around = behind(under || el.parentElement || el);
  if (!el.matches(":focus")) {
    // The focus is inside a control chromium builds itself (a date field's calendar button),
    // which draws its own ring there.
  } else if (s.outlineStyle !== "none" && width >= 2) {
    const c = parse(s.outlineColor);
    const r = c && around ? ratio(over(c, around), around) : 3;
    if (r < 3) ring = "outline " + s.outlineColor + " on " + hex(around) + " = " + r.toFixed(2) + ":1";
  } else if (!(s.boxShadow && s.boxShadow !== "none")) {
    ring = "no focus indicator (outline " + s.outlineStyle + " " + s.outlineWidth + ")";
  }
  return { tag: el.getAttribute("data-kbd"), what: describe(el), ring };
})()`;

export interface TabWalk {
  /** Tagged controls the Tab key never reached (descriptions). */
  unreached: string[];
  /** Focused elements without a visible focus indicator, with the reason. */
  noRing: string[];
  /** Elements with a positive tabindex (they break the reading order). */
  positive: string[];
  /** How many controls were reached. */
  reached: number;
}

/**
 * Presses Tab until every tagged control was focused or the walk came round (at most the
 * control count plus `slack` presses), recording which were reached and how each looked.
 */
export async function tabWalk(page: Page, slack = 30): Promise<TabWalk> {
  const { count, positive } = await page.evaluate(TAG) as { count: number; positive: string[] };
  // Every element the focus arrives at, however briefly, is also noted as it arrives: leaving
  // a frame (the block pages' previews) moves the focus asynchronously, so a sample taken after
  // a press can still see the frame while the next press already moves on from the element
  // after it, which the walk would then never see focused.
  await page.evaluate(`(() => {
    globalThis.__arrivals = [];
    if (globalThis.__arrivalsOn) return;
    globalThis.__arrivalsOn = true;
    document.addEventListener("focusin", (e) => {
      const tag = e.target.getAttribute && e.target.getAttribute("data-kbd");
      if (tag) globalThis.__arrivals.push(tag);
    }, true);
  })()`);
  const seen = new Set<string>();
  const noRing = new Set<string>();
  for (let i = 0; i < count + slack && seen.size < count; i++) {
    await page.keyboard.press("Tab");
    const f = await page.evaluate(FOCUSED) as { tag: string | null; what: string; ring: string };
    if (f.tag) seen.add(f.tag);
    if (f.ring) noRing.add(`${f.what}: ${f.ring}`);
    const arrived = await page.evaluate("globalThis.__arrivals.splice(0)") as string[];
    for (const tag of arrived) seen.add(tag);
  }
  const unreached = await page.evaluate(`[...document.querySelectorAll("[data-kbd]")]
    .filter((e) => !${JSON.stringify([...seen])}.includes(e.getAttribute("data-kbd")))
    .map((e) => e.outerHTML.slice(0, 120))`) as string[];
  return { unreached, noRing: [...noRing], positive, reached: seen.size };
}

/** The focused element's description (for keyboard scenarios). */
export async function focused(page: Page): Promise<string> {
  return ((await page.evaluate(FOCUSED)) as { what: string }).what;
}
