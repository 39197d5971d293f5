// Building the DOM from data, safely: text goes in as text nodes (never parsed as HTML),
// attributes through setAttribute. Nothing here, nor anywhere in the dashboard, assigns
// innerHTML.

const SVG_NS = "http://www.w3.org/2000/svg";

function build(node, attrs, children) {
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "class") node.setAttribute("class", value);
    else if (name.startsWith("on") && typeof value === "function") {
      node.addEventListener(name.slice(2), value);
    } else node.setAttribute(name, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

/** Append children: nodes as they are, anything else as text. */
export function append(node, children) {
  for (const child of [children].flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** An HTML element: h("td", {class: "num"}, "12 ms"). */
export function h(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

/** An SVG element, for the charts. */
export function s(tag, attrs, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

/** Replace every child of ``node``. */
export function replace(node, ...children) {
  node.replaceChildren();
  return append(node, children);
}

/** A <select> with ``options`` ([value, label] pairs or strings), keeping ``current``. */
export function select(attrs, options, current) {
  const node = h("select", attrs);
  setOptions(node, options, current);
  return node;
}

export function setOptions(node, options, current) {
  const wanted = current === undefined ? node.value : current;
  node.replaceChildren(
    ...options.map((option) => {
      const [value, label] = Array.isArray(option) ? option : [option, option];
      return h("option", { value }, label);
    }),
  );
  if ([...node.options].some((option) => option.value === wanted)) node.value = wanted;
  return node;
}

/** A two-column definition list from [label, value] rows (rows with null value skipped). */
export function facts(rows, attrs) {
  const list = h("dl", { class: "facts", ...attrs });
  for (const [label, value] of rows) {
    if (value === null || value === undefined) continue;
    list.append(h("dt", null, label), h("dd", null, value));
  }
  return list;
}

/** A table: head labels and rows of cells (a cell is a node, a string or [attrs, content]). */
export function table(head, rows, attrs) {
  const cell = (tag, content) =>
    Array.isArray(content) && content.length === 2 && typeof content[0] === "object" &&
    content[0] !== null && !(content[0] instanceof Node)
      ? h(tag, content[0], content[1])
      : h(tag, null, content);
  return h(
    "table",
    attrs,
    h("thead", null, h("tr", null, head.map((label) => cell("th", label)))),
    h("tbody", null, rows.map((row) => (row instanceof Node ? row : h("tr", null, row.map((c) => cell("td", c)))))),
  );
}

/** A small coloured label. */
export function badge(text, tone) {
  return h("span", { class: `badge ${tone || ""}` }, text);
}
