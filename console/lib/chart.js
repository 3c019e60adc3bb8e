// The one wrapper of uPlot: a time-series chart component. uPlot's stylesheet is linked once,
// on first use, so pages without charts do not load it.
import uPlot from "../vendor/uplot.js";
import { html, useEffect, useRef, useState } from "./ui.js";

let styled = false;
function linkStyle() {
  if (styled) return;
  styled = true;
  const link = document.createElement("link");
  link.rel = "stylesheet";
  link.href = "/console/assets/vendor/uplot.css";
  document.head.appendChild(link);
}

/** The theme's chart colours and axis colours (design tokens in app.css), read at drawing. */
function themeColours() {
  const css = getComputedStyle(document.documentElement);
  const token = (name) => css.getPropertyValue(name).trim();
  return {
    series: [1, 2, 3, 4, 5].map((i) => token(`--chart-${i}`)),
    axis: { stroke: token("--muted"), grid: { stroke: token("--border") } },
  };
}

/**
 * A line chart of `series` ({label, values, format?}) over `times` (ms since the epoch);
 * `percent` fixes the y axis to 0-100 %.
 * `label` names the chart for assistive technology; the table beside it carries the numbers.
 */
export function TimeChart({ times, series, label, timeLabel, height = 220, percent = false }) {
  const box = useRef(null);
  // The theme changed: draw again in its colours.
  const [theme, setTheme] = useState(document.documentElement.dataset.theme);
  useEffect(() => {
    const follow = () => setTheme(document.documentElement.dataset.theme);
    addEventListener("waf:theme", follow);
    return () => removeEventListener("waf:theme", follow);
  }, []);
  useEffect(() => {
    linkStyle();
    const el = box.current;
    if (!el) return;
    const width = Math.max(240, el.clientWidth || 600);
    const colours = themeColours();
    const opts = {
      width,
      height,
      series: [
        { label: timeLabel },
        ...series.map((s, i) => ({
          label: s.label,
          stroke: colours.series[i % colours.series.length],
          width: 2,
          points: { show: true, size: 4 },
          value: (_u, v) => v == null ? "-" : s.format ? s.format(v) : String(v),
        })),
      ],
      scales: { x: { time: true }, ...(percent ? { y: { range: [0, 100] } } : {}) },
      axes: [
        colours.axis,
        { ...colours.axis, ...(percent ? { values: (_u, vs) => vs.map((v) => v + "%") } : {}) },
      ],
    };
    const data = [times.map((t) => t / 1000), ...series.map((s) => s.values)];
    const chart = new uPlot(opts, data, el);
    // Follows its box (a rotated phone, a collapsed sidebar), never wider than the page.
    const resize = new ResizeObserver(() => {
      const w = Math.max(240, el.clientWidth);
      if (w !== chart.width) chart.setSize({ width: w, height });
    });
    resize.observe(el);
    return () => {
      resize.disconnect();
      chart.destroy();
    };
  }, [times, series, height, percent, timeLabel, theme]);
  return html`<div class="chart" ref=${box} role="img" aria-label=${label}></div>`;
}
