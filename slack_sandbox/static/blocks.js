// Block Kit -> DOM: message blocks, and the input blocks of a modal.
// Like mrkdwn.js, text only ever becomes text nodes (no innerHTML).
"use strict";

const Blocks = (() => {
  const { el } = Mrkdwn;

  /** A text object: mrkdwn is rendered, plain_text is shown as typed. */
  function text(obj, names) {
    if (!obj) return el("span");
    if (obj.type === "mrkdwn") {
      return Mrkdwn.render(obj.text || "", names, { verbatim: obj.verbatim === true });
    }
    return el("span", "plain", [obj.text || ""]);
  }

  function button(element, ctx) {
    const style = element.style ? " btn-" + element.style : "";
    const node = el("button", "btn" + style, [(element.text && element.text.text) || "Button"]);
    node.type = "button";
    node.title = element.action_id + (element.value ? " = " + element.value : "");
    if (!ctx.onButton) {
      node.disabled = true;
      node.title = "Buttons inside modals are not simulated by the sandbox";
    } else {
      node.addEventListener("click", () => ctx.onButton(element, node));
    }
    return node;
  }

  function element(elementObj, ctx) {
    if (!elementObj) return el("span");
    switch (elementObj.type) {
      case "button":
        return button(elementObj, ctx);
      case "image":
        return el("span", "image-stub", ["[image: " + (elementObj.alt_text || "") + "]"]);
      case "plain_text":
      case "mrkdwn":
        return text(elementObj, ctx.names);
      default:
        return el("span", "element-stub", ["[" + elementObj.type + "]"]);
    }
  }

  function richText(block) {
    const out = el("div", "rich-text");
    for (const part of block.elements || []) {
      const words = (part.elements || []).map((e) => e.text || e.url || e.name || "").join("");
      if (part.type === "rich_text_preformatted") out.append(el("pre", "code-block", [words]));
      else if (part.type === "rich_text_quote") out.append(el("div", "quote", [words]));
      else out.append(el("div", "", [words]));
    }
    return out;
  }

  function block(b, ctx) {
    const names = ctx.names;
    switch (b.type) {
      case "header":
        return el("div", "block-header", [(b.text && b.text.text) || ""]);
      case "divider":
        return el("hr", "block-divider");
      case "section": {
        const body = el("div", "section-body");
        if (b.text) body.append(text(b.text, names));
        if (b.fields && b.fields.length) {
          body.append(el("div", "section-fields", b.fields.map((f) => text(f, names))));
        }
        const node = el("div", "block-section", [body]);
        if (b.accessory) node.append(el("div", "accessory", [element(b.accessory, ctx)]));
        return node;
      }
      case "context":
        return el("div", "block-context", (b.elements || []).map((e) => element(e, ctx)));
      case "actions":
        return el("div", "block-actions", (b.elements || []).map((e) => element(e, ctx)));
      case "rich_text":
        return richText(b);
      case "image":
        return el("div", "image-stub", ["[image: " + (b.alt_text || "") + "]"]);
      case "input":
        return ctx.inputs ? input(b, ctx) : el("div", "element-stub", ["[input: " +
          ((b.label && b.label.text) || b.block_id) + "]"]);
      default:
        return el("div", "element-stub", ["[unsupported block: " + b.type + "]"]);
    }
  }

  /** Render `blocks`; ctx = {names, onButton(element, node)?, inputs?: {values, errors}}. */
  function render(blocks, ctx) {
    return el("div", "blocks", (blocks || []).map((b) => block(b, ctx)));
  }

  // -- modal inputs ---------------------------------------------------------------------

  function shownValue(b, ctx) {
    const state = ctx.inputs.values[b.block_id];
    const action = b.element.action_id;
    if (state && action in state) {
      const s = state[action];
      if ("value" in s) return s.value;
      if ("selected_options" in s) return (s.selected_options || []).map((o) => o.value);
      return s.selected_option ? s.selected_option.value : null;
    }
    const e = b.element;
    if (e.type === "checkboxes") return (e.initial_options || []).map((o) => o.value);
    if (e.initial_option) return e.initial_option.value;
    return e.initial_value == null ? null : e.initial_value;
  }

  function choice(kind, name, option, checked, names) {
    const box = el("input");
    box.type = kind;
    box.name = name;
    box.value = option.value;
    box.checked = checked;
    const label = el("label", "choice", [box, text(option.text, names)]);
    if (option.description) label.append(el("div", "hint", [option.description.text || ""]));
    return label;
  }

  function control(b, ctx) {
    const e = b.element;
    const value = shownValue(b, ctx);
    const options = e.options || [];
    if (e.type === "plain_text_input" || e.type === "number_input") {
      const field = el(e.multiline ? "textarea" : "input", "field");
      if (!e.multiline) field.type = "text";
      if (e.type === "number_input") field.inputMode = e.is_decimal_allowed ? "decimal" : "numeric";
      if (e.multiline) field.rows = 4;
      if (e.placeholder) field.placeholder = e.placeholder.text;
      field.value = value == null ? "" : value;
      return field;
    }
    if (e.type === "static_select") {
      const select = el("select", "field", [el("option", "", ["Select an option"])]);
      select.firstChild.value = "";
      for (const o of options) {
        const option = el("option", "", [(o.text && o.text.text) || o.value]);
        option.value = o.value;
        select.append(option);
      }
      select.value = value || "";
      return select;
    }
    if (e.type === "radio_buttons" || e.type === "checkboxes") {
      const kind = e.type === "radio_buttons" ? "radio" : "checkbox";
      const chosen = Array.isArray(value) ? value : [value];
      return el("div", "choices", options.map((o) =>
        choice(kind, b.block_id, o, chosen.includes(o.value), ctx.names)));
    }
    return el("div", "element-stub", ["[" + e.type + " is not simulated]"]);
  }

  function input(b, ctx) {
    const label = el("div", "input-label", [(b.label && b.label.text) || ""]);
    if (b.optional) label.append(el("span", "optional", [" (optional)"]));
    const node = el("div", "block-input", [label, control(b, ctx)]);
    node.dataset.blockId = b.block_id;
    node.dataset.kind = b.element.type;
    if (b.hint) node.append(el("div", "hint", [b.hint.text || ""]));
    node.append(el("div", "input-error"));
    return node;
  }

  /** Show `errors` (block_id -> message) under the inputs of `form`. */
  function showErrors(form, errors) {
    for (const node of form.querySelectorAll(".block-input")) {
      const message = (errors || {})[node.dataset.blockId] || "";
      node.classList.toggle("has-error", Boolean(message));
      node.querySelector(".input-error").textContent = message;
    }
  }

  /** Read the inputs of `form` as {block_id: raw value} for /sandbox/submit. */
  function readValues(form) {
    const values = {};
    for (const node of form.querySelectorAll(".block-input")) {
      const id = node.dataset.blockId;
      const kind = node.dataset.kind;
      if (kind === "checkboxes") {
        values[id] = [...node.querySelectorAll("input:checked")].map((i) => i.value);
      } else if (kind === "radio_buttons") {
        const picked = node.querySelector("input:checked");
        values[id] = picked ? picked.value : null;
      } else {
        const field = node.querySelector(".field");
        if (field) values[id] = field.value === "" ? null : field.value;
      }
    }
    return values;
  }

  return { render, text, showErrors, readValues };
})();
