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
    large_orange_circle: "🟠", black_circle: "⚫", ballot_box_with_check: "☑️",
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

  // A bare URL Slack auto-links in a text object without `verbatim: true`.
  const BARE_URL = /(?<![\w@.:\/-])(?:https?:\/\/|www\.|mailto:)[^\s<>`|]+/giu;

  /** Plain text: a text node, or (when not verbatim) text with auto-linked bare URLs. */
  function plain(text, opts) {
    const raw = unescape(text);
    if (opts.verbatim) return [raw];
    const out = [];
    let last = 0;
    for (const match of raw.matchAll(BARE_URL)) {
      if (match.index > last) out.push(raw.slice(last, match.index));
      const link = el("a", "link auto-link", [match[0]]);
      link.title = "auto-linked by Slack (the text object is not verbatim)";
      out.push(link);
      last = match.index + match[0].length;
    }
    if (last < raw.length) out.push(raw.slice(last));
    return out;
  }

  function inline(text, names, opts) {
    const out = [];
    let last = 0;
    for (const match of text.matchAll(INLINE)) {
      if (match.index > last) out.push(...plain(text.slice(last, match.index), opts));
      const token = match[0];
      const inner = token.slice(1, -1);
      if (match[1]) out.push(el("code", "inline-code", plain(inner, opts)));
      else if (match[2]) out.push(control(token, names));
      else if (match[3]) out.push(el("strong", "", inline(inner, names, opts)));
      else if (match[4]) out.push(el("em", "", inline(inner, names, opts)));
      else if (match[5]) out.push(el("s", "", inline(inner, names, opts)));
      else out.push(EMOJI[inner] || token);
      last = match.index + token.length;
    }
    if (last < text.length) out.push(...plain(text.slice(last), opts));
    return out;
  }

  // A block quote line: `>` as sent by an app, or `&gt;` as Slack stores a typed one.
  const QUOTE = /^(?:>|&gt;) ?/;

  function lines(text, names, opts) {
    const out = [];
    text.split("\n").forEach((line, i) => {
      if (i > 0) out.push(document.createElement("br"));
      const quoted = line.match(QUOTE);
      if (quoted) {
        out.push(el("span", "quote", inline(line.slice(quoted[0].length), names, opts)));
      } else {
        out.push(...inline(line, names, opts));
      }
    });
    return out;
  }

  /** Render mrkdwn `text` to a <div>; `names` maps user and channel IDs to names;
   * `opts.verbatim` is the text object's `verbatim` (false: bare URLs are auto-linked,
   * in code too, as Slack does). */
  function render(text, names, opts) {
    opts = opts || {};
    const root = el("div", "mrkdwn");
    const parts = String(text).split("```");
    parts.forEach((part, i) => {
      if (i % 2 === 1 && i < parts.length - 1) {
        root.append(el("pre", "code-block", plain(part.replace(/^\n/, ""), opts)));
      } else {
        const chunk = i % 2 === 1 ? "```" + part : part;
        root.append(...lines(chunk, names, opts));
      }
    });
    return root;
  }

  return { render, unescape, el };
})();
