// The one wrapper of uPlot: a time-series chart component. uPlot's stylesheet is linked once,
// on first use, so pages without charts do not load it.
import uPlot from "../vendor/uplot.js";
import { html, useEffect, useRef } from "./ui.js";

let styled = false;
function linkStyle() {
  if (styled) return;
  styled = true;
  const link = document.createElement("link");
  link.rel = "stylesheet";
  link.href = "/console/assets/vendor/uplot.css";
  document.head.appendChild(link);
}

const COLORS = ["#2563eb", "#dc2626", "#16a34a", "#d97706", "#7c3aed"];

/**
 * A line chart of `series` ({label, values, format?}) over `times` (ms since the epoch);
 * `percent` fixes the y axis to 0-100 %.
 * `label` names the chart for assistive technology; the table beside it carries the numbers.
 */
export function TimeChart({ times, series, label, timeLabel, height = 220, percent = false }) {
  const box = useRef(null);
  useEffect(() => {
    linkStyle();
    const el = box.current;
    if (!el) return;
    const width = Math.max(300, el.clientWidth || 600);
    const opts = {
      width,
      height,
      series: [
        { label: timeLabel },
        ...series.map((s, i) => ({
          label: s.label,
          stroke: COLORS[i % COLORS.length],
          width: 2,
          points: { show: true, size: 4 },
          value: (_u, v) => v == null ? "-" : s.format ? s.format(v) : String(v),
        })),
      ],
      scales: { x: { time: true }, ...(percent ? { y: { range: [0, 100] } } : {}) },
      axes: [{}, percent ? { values: (_u, vs) => vs.map((v) => v + "%") } : {}],
    };
    const data = [times.map((t) => t / 1000), ...series.map((s) => s.values)];
    const chart = new uPlot(opts, data, el);
    return () => chart.destroy();
  }, [times, series, height, percent, timeLabel]);
  return html`<div class="chart" ref=${box} role="img" aria-label=${label}></div>`;
}
