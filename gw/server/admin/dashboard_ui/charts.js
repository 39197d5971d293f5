// Charts as inline SVG, drawn from data with DOM calls (no library, no innerHTML).
// Colours come from CSS classes (app.css), so the charts follow the page's theme.

import { s } from "./dom.js";
import { compact } from "./format.js";

/** The width to draw at: the container's own (charts are drawn at their size, so text
 * stays its size), or ``fallback`` while it is not laid out. */
export function widthOf(container, fallback) {
  return Math.max(320, Math.floor(container.clientWidth) || fallback);
}

/** Up to about ``count`` round tick values from 0 to at least ``max``. */
export function ticks(max, count = 4) {
  if (!(max > 0)) return [0, 1];
  const raw = max / count;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((f) => f * magnitude).find((f) => f >= raw);
  const top = Math.ceil(max / step - 1e-9) * step;
  const values = [];
  for (let value = 0; value <= top + step / 2; value += step) values.push(Number(value.toPrecision(12)));
  return values;
}

function svgRoot(width, height, label) {
  return s("svg", {
    class: "chart",
    viewBox: `0 0 ${width} ${height}`,
    width,
    height,
    role: "img",
    "aria-label": label,
    preserveAspectRatio: "xMinYMin meet",
  });
}

/**
 * Vertical bars, one per point: points = [{label, value}], format(value) -> text.
 * Labels are thinned out when there are too many to read.
 */
export function columnChart(points, { label, format = compact, width = 1000, height = 220 } = {}) {
  const root = svgRoot(width, height, label);
  const left = 56;
  const right = 12;
  const top = 12;
  const bottom = 34;
  const plotW = width - left - right;
  const plotH = height - top - bottom;
  const max = Math.max(0, ...points.map((p) => p.value));
  const scale = ticks(max);
  const topValue = scale[scale.length - 1];
  const y = (value) => top + plotH - (value / topValue) * plotH;
  for (const value of scale) {
    root.append(
      s("line", { class: "grid", x1: left, x2: width - right, y1: y(value), y2: y(value) }),
      s("text", { class: "tick", x: left - 6, y: y(value) + 4, "text-anchor": "end" }, format(value)),
    );
  }
  if (!points.length) {
    root.append(s("text", { class: "empty", x: left + plotW / 2, y: top + plotH / 2, "text-anchor": "middle" }, "no data"));
    return root;
  }
  const slot = plotW / points.length;
  const barW = Math.max(2, Math.min(48, slot * 0.7));
  const every = Math.ceil(points.length / Math.max(1, Math.floor(plotW / 64)));
  points.forEach((point, index) => {
    const x = left + index * slot + (slot - barW) / 2;
    const barTop = y(point.value);
    root.append(
      s(
        "rect",
        { class: "bar", x, y: barTop, width: barW, height: Math.max(0, top + plotH - barTop), rx: 2 },
        s("title", null, `${point.label}: ${format(point.value)}`),
      ),
    );
    if ((points.length - 1 - index) % every === 0) { // thinned from the end: today is labelled
      root.append(
        s("text", { class: "tick", x: x + barW / 2, y: height - bottom + 16, "text-anchor": "middle" }, point.label),
      );
    }
  });
  root.append(s("line", { class: "axis", x1: left, x2: width - right, y1: top + plotH, y2: top + plotH }));
  return root;
}

/** Horizontal bars with their labels and values: rows = [{label, value}], biggest first. */
export function barList(rows, { label, format = compact, width = 520, limit = 10 } = {}) {
  const shown = rows.slice(0, limit);
  const rowH = 26;
  const labelW = 190;
  const valueW = 76;
  const height = Math.max(1, shown.length) * rowH + 8;
  const root = svgRoot(width, height, label);
  const max = Math.max(0, ...shown.map((row) => row.value));
  const plotW = width - labelW - valueW;
  if (!shown.length) {
    root.append(s("text", { class: "empty", x: 8, y: 20 }, "no data"));
    return root;
  }
  shown.forEach((row, index) => {
    const y = 4 + index * rowH;
    const barW = max > 0 ? Math.max(1, (row.value / max) * plotW) : 0;
    const name = row.label.length > 28 ? `${row.label.slice(0, 27)}…` : row.label;
    root.append(
      s("text", { class: "label", x: labelW - 8, y: y + 17, "text-anchor": "end" }, s("title", null, row.label), name),
      s("rect", { class: "bar", x: labelW, y: y + 4, width: barW, height: rowH - 8, rx: 2 }, s("title", null, `${row.label}: ${format(row.value)}`)),
      s("text", { class: "value", x: labelW + barW + 6, y: y + 17 }, format(row.value)),
    );
  });
  return root;
}

/**
 * Attempts on a time axis (ms from the request's start): rows = [{label, start, end,
 * ttft, tone, text, title}]; ``total`` is the request's whole latency.
 */
export function timeline(rows, { total, label = "attempts timeline", width = 1000 } = {}) {
  const labelW = 230;
  const right = 24;
  const rowH = 30;
  const top = 8;
  const axisH = 28;
  const height = top + rows.length * rowH + axisH;
  const root = svgRoot(width, height, label);
  const end = Math.max(total || 0, ...rows.map((row) => row.end), 1);
  const scale = ticks(end, 6);
  const last = scale[scale.length - 1];
  const plotW = width - labelW - right;
  const x = (t) => labelW + (Math.max(0, t) / last) * plotW;
  const axisY = top + rows.length * rowH + 4;
  for (const t of scale) {
    root.append(
      s("line", { class: "grid", x1: x(t), x2: x(t), y1: top, y2: axisY }),
      s("text", { class: "tick", x: x(t), y: axisY + 16, "text-anchor": "middle" }, `${compact(t)} ms`),
    );
  }
  if (total) {
    root.append(s("line", { class: "total", x1: x(total), x2: x(total), y1: top, y2: axisY }, s("title", null, `request ended at ${Math.round(total)} ms`)));
  }
  rows.forEach((row, index) => {
    const y = top + index * rowH;
    const x0 = x(row.start);
    const w = Math.max(3, x(row.end) - x0);
    const group = s("g", { class: `attempt ${row.tone}`, "data-testid": "timeline-attempt" });
    group.append(
      s("title", null, row.title || row.label),
      s("text", { class: "label", x: labelW - 8, y: y + 19, "text-anchor": "end" }, row.label),
      s("rect", { class: "span", x: x0, y: y + 5, width: w, height: rowH - 10, rx: 3 }),
    );
    if (row.ttft !== null && row.ttft !== undefined) {
      const tx = x(row.start + row.ttft);
      group.append(s("line", { class: "ttft", x1: tx, x2: tx, y1: y + 2, y2: y + rowH - 2 }));
    }
    // The text goes right of the bar, else left of it, else inside it (white on colour).
    const textW = row.text.length * 6.6;
    let place = { class: "span-text", x: x0 + w + 6, "text-anchor": "start" };
    if (x0 + w + 6 + textW > width - 4) {
      place = x0 - 6 - textW > labelW
        ? { class: "span-text", x: x0 - 6, "text-anchor": "end" }
        : { class: "span-text inside", x: x0 + w - 6, "text-anchor": "end" };
    }
    group.append(s("text", { ...place, y: y + 19 }, row.text));
    root.append(group);
  });
  root.append(s("line", { class: "axis", x1: labelW, x2: width - right, y1: axisY, y2: axisY }));
  return root;
}
