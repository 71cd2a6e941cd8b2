// Small DOM and text helpers shared by the demos.
// Text from the demo JSON only ever reaches the page through textContent, never innerHTML.

/** Create an element: h("button", {type: "button", class: "x"}, "text", child). */
export function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === false || value === null || value === undefined) continue;
    if (name === "class") node.className = value;
    else if (name === "text") node.textContent = value;
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  // append() turns anything but a node into text.
  node.append(...children.filter((child) => child !== null && child !== undefined && child !== false));
  return node;
}

/** Set text only when it changes, so a frame that changes nothing writes nothing. */
export function setText(node, text) {
  const value = String(text);
  if (node.textContent !== value) node.textContent = value;
}

/** Set an attribute only when it changes. */
export function setAttr(node, name, value) {
  const text = String(value);
  if (node.getAttribute(name) !== text) node.setAttribute(name, text);
}

/** Toggle a class only when it changes. */
export function setClass(node, name, on) {
  if (node.classList.contains(name) !== Boolean(on)) node.classList.toggle(name, Boolean(on));
}

/**
 * Labels come from the JSON's `strings`. A missing key shows the key itself (so a gap is
 * visible while developing) and is recorded on the demo as data-pd-missing-strings for tests.
 */
export function makeStrings(strings, root) {
  const missing = new Set();
  return function text(key, vars = {}) {
    if (!Object.hasOwn(strings, key)) {
      missing.add(key);
      root.dataset.pdMissingStrings = [...missing].join(" ");
    }
    return (strings[key] ?? key).replace(/\{(\w+)\}/g, (whole, name) => (name in vars ? String(vars[name]) : whole));
  };
}

/** Number formatting. Every language writes digits one way, as the build does (hooks/demos/formatting.py). */
export function makeFormat() {
  const locale = "en";
  const formatters = new Map();  // by number of decimals: making an Intl.NumberFormat is slow
  const formatter = (digits) => formatters.get(digits) || formatters.set(digits,
    new Intl.NumberFormat(locale, { minimumFractionDigits: digits, maximumFractionDigits: digits })).get(digits);
  return {
    /** A number with a sensible number of decimals for its size. */
    number(value, digits) {
      if (!Number.isFinite(value)) return "–";
      const d = digits ?? (Math.abs(value) >= 100 ? 0 : Math.abs(value) >= 10 ? 1 : 2);
      return formatter(d).format(value);
    },
    ms(value) { return `${this.number(value)} ms`; },
    bytes(value) {
      if (!Number.isFinite(value)) return "–";
      const [unit, scale] = [["GB", 1e9], ["MB", 1e6], ["KB", 1e3]].find(([, s]) => value >= s) || ["B", 1];
      return `${this.number(value / scale, scale === 1 ? 0 : undefined)} ${unit}`;
    },
    percent(fraction) { return `${this.number(fraction * 100, fraction * 100 >= 10 ? 0 : 1)}%`; },
  };
}

/** A meter: a labelled bar whose fill is a fraction 0..1 (role=meter for screen readers). */
export function meter(label) {
  const fill = h("span", { class: "pd-meter__fill" });
  const value = h("span", { class: "pd-meter__value" });
  const bar = h("span", {
    class: "pd-meter__bar", role: "meter", "aria-valuemin": 0, "aria-valuemax": 100,
    "aria-valuenow": 0, "aria-label": label,
  }, fill);
  const node = h("div", { class: "pd-meter" }, h("span", { class: "pd-meter__label", text: label }), bar, value);
  return {
    node,
    set(fraction, text) {
      const clamped = Math.max(0, Math.min(1, Number.isFinite(fraction) ? fraction : 0));
      fill.style.setProperty("--pd-fill", clamped.toFixed(4));
      setAttr(bar, "aria-valuenow", Math.round(clamped * 100));
      setAttr(bar, "aria-valuetext", text);
      setText(value, text);
    },
  };
}

/**
 * Token chips: one span per token, text escaped, special tokens marked. A token holding only part of
 * a character's bytes gets pd-token--partial; a prompt token gets its role (template, system, user).
 */
export function tokenChip({ text, partial, role, bytes }) {
  const special = /^<\|[^|]*\|>$|^<\/?s>$/.test(text);
  const classes = ["pd-token", special && "pd-token--special", partial && "pd-token--partial", role && `pd-token--${role}`];
  // Bytes that never make a whole character are shown, not U+FFFD. Whitespace-only pieces would be
  // invisible chips: they get a visible stand-in (screen readers get the text).
  const shown = bytes && text.includes("\ufffd") ? bytes
    : text === "" ? "\u00a0" : text.replace(/\n/g, "↵").replace(/^ +$/, (spaces) => "␣".repeat(spaces.length));
  return h("span", { class: classes.filter(Boolean).join(" "), text: shown });
}

const ICON_PATHS = {
  play: "M4 2.5v11l9-5.5z",
  pause: "M3.5 2.5h3v11h-3zM9.5 2.5h3v11h-3z",
  back: "M2.5 2.5h2v11h-2zM13.5 2.5v11l-8-5.5z",
  forward: "M11.5 2.5h2v11h-2zM2.5 2.5v11l8-5.5z",
  restart: "M8 2.5a5.5 5.5 0 1 1-5.2 3.7l1.9.6A3.5 3.5 0 1 0 8 4.5v2L4.5 3.5 8 .5z",
};

/** A small inline SVG icon (decorative: the button carries the accessible name). */
export function icon(name) {
  const ns = "http://www.w3.org/2000/svg";
  const element = (tag, attrs) => {
    const node = document.createElementNS(ns, tag);
    for (const [attr, value] of Object.entries(attrs)) node.setAttribute(attr, value);
    return node;
  };
  const svg = element("svg", { viewBox: "0 0 16 16", "aria-hidden": "true", focusable: "false", class: "pd-icon" });
  svg.append(element("path", { d: ICON_PATHS[name], fill: "currentColor" }));
  return svg;
}
