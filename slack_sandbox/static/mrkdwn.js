// Slack mrkdwn -> DOM nodes. Never uses innerHTML: every piece of text is a text node,
// so whatever the bot (or the agent behind it) wrote can only ever show up as text.
"use strict";

const Mrkdwn = (() => {
  const ENTITIES = { "&amp;": "&", "&lt;": "<", "&gt;": ">" };

  /** Slack's three escapes back to the characters they stand for. */
  function unescape(text) {
    return text.replace(/&(amp|lt|gt);/g, (m) => ENTITIES[m]);
  }

  function el(tag, className, children) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    for (const child of children || []) {
      node.append(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  }

  // `code`, <control sequence>, *bold*, _italic_, ~strike~, :emoji: -- as in Slack, the
  // markers only count at word edges (so list_tables and :robot_face: stay as they are).
  const INLINE = new RegExp([
    String.raw`(\x60[^\x60\n]+\x60)`,
    String.raw`(<[^<>\n]+>)`,
    String.raw`((?<![\p{L}\p{N}_*])\*[^*\n]+\*(?![\p{L}\p{N}_*]))`,
    String.raw`((?<![\p{L}\p{N}_])_[^_\n]+_(?![\p{L}\p{N}_]))`,
    String.raw`((?<![\p{L}\p{N}_~])~[^~\n]+~(?![\p{L}\p{N}_~]))`,
    String.raw`(:[a-z0-9_+-]+:)`,
  ].join("|"), "gu");
  const EMOJI = {
    robot_face: "🤖", white_check_mark: "✅", heavy_check_mark: "✔️", x: "❌", warning: "⚠️",
    hourglass: "⌛", hourglass_flowing_sand: "⏳", no_entry: "⛔", lock: "🔒", pencil2: "✏️",
    speech_balloon: "💬", eyes: "👀", tada: "🎉", rotating_light: "🚨", information_source: "ℹ️",
    stopwatch: "⏱️", memo: "📝", gear: "⚙️", question: "❓", thumbsup: "👍", "+1": "👍",
    raised_hand: "✋", hand: "✋", construction: "🚧", mag: "🔍", clipboard: "📋",
    wastebasket: "🗑️", arrows_counterclockwise: "🔄", leftwards_arrow_with_hook: "↩️",
    heavy_multiplication_x: "✖️", large_green_circle: "🟢", red_circle: "🔴",
  };

  function control(token, names) {
    const inner = token.slice(1, -1);
    const [target, label] = inner.split("|", 2);
    if (target.startsWith("@")) {
      const id = target.slice(1);
      return el("span", "mention", ["@" + (label || names.users[id] || id)]);
    }
    if (target.startsWith("#")) {
      const id = target.slice(1);
      return el("span", "mention", ["#" + (label || names.channels[id] || id)]);
    }
    if (target.startsWith("!date^")) {
      // Slack shows a localised date; the sandbox shows the fallback text.
      return el("span", "date", [unescape(label || target.slice(6).split("^")[0])]);
    }
    if (target.startsWith("!subteam^")) {
      // A user-group mention: Slack shows the group's @handle.
      const id = target.slice("!subteam^".length);
      return el("span", "mention", ["@" + (label || (names.groups || {})[id] || id)]);
    }
    if (target.startsWith("!")) {
      const word = target.slice(1).split("^")[0];
      return el("span", "mention broadcast", ["@" + (label || word)]);
    }
    const link = el("a", "link", [unescape(label || target)]);
    if (/^https?:\/\//i.test(target)) {
      link.href = unescape(target);
      link.target = "_blank";
      link.rel = "noopener noreferrer";
    }
    link.title = unescape(target);
    return link;
  }

  function inline(text, names) {
    const out = [];
    let last = 0;
    for (const match of text.matchAll(INLINE)) {
      if (match.index > last) out.push(unescape(text.slice(last, match.index)));
      const token = match[0];
      const inner = token.slice(1, -1);
      if (match[1]) out.push(el("code", "inline-code", [unescape(inner)]));
      else if (match[2]) out.push(control(token, names));
      else if (match[3]) out.push(el("strong", "", inline(inner, names)));
      else if (match[4]) out.push(el("em", "", inline(inner, names)));
      else if (match[5]) out.push(el("s", "", inline(inner, names)));
      else out.push(EMOJI[inner] || token);
      last = match.index + token.length;
    }
    if (last < text.length) out.push(unescape(text.slice(last)));
    return out;
  }

  function lines(text, names) {
    const out = [];
    text.split("\n").forEach((line, i) => {
      if (i > 0) out.push(document.createElement("br"));
      if (line.startsWith("&gt; ")) {
        out.push(el("span", "quote", inline(line.slice(5), names)));
      } else {
        out.push(...inline(line, names));
      }
    });
    return out;
  }

  /** Render mrkdwn `text` to a <div>; `names` maps user and channel IDs to names. */
  function render(text, names) {
    const root = el("div", "mrkdwn");
    const parts = String(text).split("```");
    parts.forEach((part, i) => {
      if (i % 2 === 1 && i < parts.length - 1) {
        root.append(el("pre", "code-block", [unescape(part.replace(/^\n/, ""))]));
      } else {
        const chunk = i % 2 === 1 ? "```" + part : part;
        root.append(...lines(chunk, names));
      }
    });
    return root;
  }

  return { render, unescape, el };
})();
