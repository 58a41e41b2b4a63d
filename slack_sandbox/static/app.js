// The sandbox page: polls /sandbox/state and acts through /sandbox/* JSON endpoints.
"use strict";

(() => {
  const POLL_MS = 700;
  const { el } = Mrkdwn;
  const $ = (id) => document.getElementById(id);

  const ui = {
    state: null,
    stateJson: "",
    channel: localStorage.getItem("sandbox.channel"),
    focus: null, // the ts a permalink (#C…/p…) asks to scroll to
    user: localStorage.getItem("sandbox.user"),
    modalKey: "",
    modalView: null,
  };

  // -- talking to the sandbox ------------------------------------------------------------

  async function post(path, body) {
    try {
      const response = await fetch(path, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
      const answer = await response.json();
      if (answer.field_errors) toast("Some fields need attention.", "error");
      else if (!answer.ok) toast(answer.error || "HTTP " + response.status, "error");
      else if (answer.status !== 200) toast("The bot answered HTTP " + answer.status, "error");
      return answer;
    } catch (error) {
      toast("Sandbox unreachable: " + error, "error");
      return { ok: false };
    } finally {
      poll();
    }
  }

  function toast(message, kind) {
    const node = el("div", "toast " + (kind || ""), [message]);
    $("toasts").append(node);
    setTimeout(() => node.remove(), kind === "error" ? 7000 : 3000);
  }

  // -- names and times -------------------------------------------------------------------

  function names() {
    const s = ui.state;
    const users = Object.fromEntries(s.users.map((u) => [u.id, u.name]));
    users[s.bot_user_id] = "Agent Bridge";
    return {
      users,
      channels: Object.fromEntries(s.channels.map((c) => [c.id, c.name])),
      groups: Object.fromEntries((s.usergroups || []).map((g) => [g.id, g.handle])),
    };
  }

  function clock(ts) {
    const d = new Date(parseFloat(ts) * 1000);
    return d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
  }

  // -- sidebar ---------------------------------------------------------------------------

  function renderUsers() {
    const picker = $("user-picker");
    const ids = ui.state.users.map((u) => u.id);
    if (!ids.includes(ui.user)) ui.user = ids.includes("U0REVIEWER") ? "U0REVIEWER" : ids[0];
    const wanted = ui.state.users.map((u) => u.id + ":" + u.name).join(",");
    if (picker.dataset.users !== wanted) {
      picker.replaceChildren(...ui.state.users.map((u) => {
        const option = el("option", "", ["@" + u.name]);
        option.value = u.id;
        return option;
      }));
      picker.dataset.users = wanted;
    }
    picker.value = ui.user;
  }

  function renderChannels() {
    const s = ui.state;
    const ids = s.channels.map((c) => c.id);
    if (!ids.includes(ui.channel)) {
      const busy = s.channels.find((c) => (s.messages[c.id] || []).length);
      ui.channel = (busy || s.channels[0] || {}).id;
    }
    $("channel-list").replaceChildren(...s.channels.map((c) => {
      const count = (s.messages[c.id] || []).length;
      const link = el("button", "channel" + (c.id === ui.channel ? " active" : ""), [
        el("span", "hash", [c.id.startsWith("D") ? "●" : "#"]), c.name,
      ]);
      if (count) link.append(el("span", "count", [String(count)]));
      link.type = "button";
      link.addEventListener("click", () => selectChannel(c.id));
      return link;
    }));
    const channel = s.channels.find((c) => c.id === ui.channel);
    $("channel-title").textContent = channel ? "# " + channel.name : "# —";
    $("bot-status").textContent = s.request_url
      ? "Bot at " + s.request_url : "No bot connected (request_url is not set)";
    $("bot-status").classList.toggle("warn", !s.request_url);
  }

  function renderViolations() {
    const list = ui.state.violations;
    const toggle = $("violations-toggle");
    toggle.hidden = list.length === 0;
    toggle.textContent = list.length + " violation" + (list.length === 1 ? "" : "s");
    $("violations-list").replaceChildren(...list.map((v) => el("li", "", [v])));
    if (!list.length) $("violations").hidden = true;
  }

  // -- messages --------------------------------------------------------------------------

  function avatar(name, isBot) {
    const node = el("div", "avatar" + (isBot ? " bot" : ""), [(name || "?")[0].toUpperCase()]);
    if (!isBot) {
      const hue = ([...name].reduce((sum, c) => sum + c.charCodeAt(0), 0) * 47) % 360;
      node.style.background = "hsl(" + hue + " 45% 45%)";
    }
    return node;
  }

  function message(m, opts) {
    const n = names();
    const isBot = Boolean(m.bot_id);
    const ours = isBot && m.bot_id === ui.state.bot_id; // not another app's bot
    const who = ours ? "Agent Bridge" : n.users[m.user] || m.user;
    const head = el("div", "msg-head", [el("span", "author", [who])]);
    if (isBot) head.append(el("span", "app-badge", ["APP"]));
    head.append(el("span", "time", [clock(m.ts)]));
    if (m.edited) head.append(el("span", "edited", ["(edited)"]));
    const body = el("div", "msg-body", [head]);
    if (opts.ephemeral) body.prepend(el("div", "ephemeral-note", ["Only visible to you"]));
    const onButton = (element, node) => {
      if (element.confirm && !confirmed(element.confirm)) return;
      node.disabled = true;
      post("/sandbox/click", {
        channel_id: ui.channel, ts: m.ts, action_id: element.action_id,
        value: element.value, user_id: ui.user,
      }).finally(() => { node.disabled = false; });
    };
    if (m.blocks && m.blocks.length) body.append(Blocks.render(m.blocks, { names: n, onButton }));
    else body.append(Mrkdwn.render(m.text || "", n));
    const node = el("div", "msg" + (opts.ephemeral ? " ephemeral" : ""), [avatar(who, isBot), body]);
    node.dataset.ts = m.ts;
    return node;
  }

  function confirmed(c) {
    const parts = [c.title && c.title.text, c.text && c.text.text].filter(Boolean);
    return window.confirm(parts.map(Mrkdwn.unescape).join("\n\n"));
  }

  function renderMessages() {
    const s = ui.state;
    const box = $("messages");
    const atBottom = box.scrollHeight - box.scrollTop - box.clientHeight < 40;
    const mine = s.ephemerals.filter((e) => e.channel === ui.channel && e.user === ui.user);
    const top = (s.messages[ui.channel] || []).map((m) => ({ m, eph: false }));
    for (const e of mine.filter((x) => !x.thread_ts)) top.push({ m: e, eph: true });
    top.sort((a, b) => parseFloat(a.m.ts) - parseFloat(b.m.ts));
    const nodes = top.map(({ m, eph }) => {
      const node = message(m, { ephemeral: eph });
      const replies = (m.replies || []).map((r) => ({ m: r, eph: false }));
      for (const e of mine.filter((x) => x.thread_ts === m.ts)) replies.push({ m: e, eph: true });
      if (replies.length) {
        replies.sort((a, b) => parseFloat(a.m.ts) - parseFloat(b.m.ts));
        const label = replies.length + (replies.length === 1 ? " reply" : " replies");
        const thread = el("div", "thread", [el("div", "thread-label", [label])]);
        thread.append(...replies.map(({ m: r, eph: e }) => message(r, { ephemeral: e })));
        node.querySelector(".msg-body").append(thread);
      }
      return node;
    });
    if (!nodes.length) {
      nodes.push(el("div", "empty", ["No messages yet. Type /agent <task> below to start a run."]));
    }
    const scroll = box.scrollTop;
    box.replaceChildren(...nodes);
    box.scrollTop = atBottom ? box.scrollHeight : scroll;
    const linked = ui.focus && [...box.querySelectorAll(".msg")].find(
      (node) => node.dataset.ts.replace(".", "") === ui.focus);
    if (linked) {
      linked.classList.add("linked");
      linked.scrollIntoView({ block: "center" });
      ui.focus = null;
    }
  }

  // -- the modal -------------------------------------------------------------------------

  function renderModal() {
    const stack = ui.state.views[ui.user] || [];
    const view = stack[stack.length - 1];
    const layer = $("modal-layer");
    if (!view) {
      layer.hidden = true;
      ui.modalKey = "";
      ui.modalView = null;
      return;
    }
    const key = view.id + "/" + view.hash;
    const form = $("modal-body");
    if (key !== ui.modalKey) {
      const ctx = { names: names(), inputs: { values: (view.state || {}).values || {} } };
      form.replaceChildren(Blocks.render(view.blocks, ctx));
      $("modal-title").textContent = (view.title && view.title.text) || "";
      $("modal-submit").textContent = (view.submit && view.submit.text) || "Submit";
      $("modal-submit").hidden = !view.submit;
      $("modal-close").textContent = (view.close && view.close.text) ||
        (view.submit ? "Cancel" : "Close");
      ui.modalKey = key;
      layer.hidden = false;
      const first = form.querySelector(".field, input");
      if (first) first.focus();
    }
    ui.modalView = view;
    Blocks.showErrors(form, view.errors);
  }

  async function submitModal() {
    const view = ui.modalView;
    if (!view) return;
    $("modal-submit").disabled = true;
    const values = Blocks.readValues($("modal-body"));
    await post("/sandbox/submit", { view_id: view.id, user_id: ui.user, values });
    $("modal-submit").disabled = false;
  }

  function closeModal() {
    if (ui.modalView) post("/sandbox/close", { view_id: ui.modalView.id, user_id: ui.user });
  }

  // -- wiring ----------------------------------------------------------------------------

  function selectChannel(id) {
    ui.channel = id;
    localStorage.setItem("sandbox.channel", id);
    render();
    $("messages").scrollTop = $("messages").scrollHeight;
  }

  function render() {
    if (!ui.state) return;
    renderUsers();
    renderChannels();
    renderViolations();
    renderMessages();
    renderModal();
  }

  async function poll() {
    try {
      const response = await fetch("/sandbox/state", { cache: "no-store" });
      const text = await response.text();
      if (text !== ui.stateJson) {
        ui.stateJson = text;
        ui.state = JSON.parse(text);
        render();
      }
    } catch (error) {
      $("bot-status").textContent = "Sandbox unreachable — is it still running?";
    }
  }

  $("user-picker").addEventListener("change", (event) => {
    ui.user = event.target.value;
    localStorage.setItem("sandbox.user", ui.user);
    ui.modalKey = "";
    render();
  });
  $("composer").addEventListener("submit", async (event) => {
    event.preventDefault();
    const input = $("composer-input");
    const line = input.value.trim();
    if (!line || !ui.channel) return;
    const match = line.match(/^(\/\S+)\s*([\s\S]*)$/);
    const [command, text] = match ? [match[1], match[2]] : ["/agent", line];
    input.value = "";
    const answer = await post("/sandbox/command", {
      channel_id: ui.channel, user_id: ui.user, command, text,
    });
    if (answer.ok) toast(command + " sent (bot answered HTTP " + answer.status + ")");
  });
  $("modal-submit").addEventListener("click", submitModal);
  $("modal-close").addEventListener("click", closeModal);
  $("modal-x").addEventListener("click", closeModal);
  $("modal-body").addEventListener("submit", (event) => { event.preventDefault(); submitModal(); });
  $("violations-toggle").addEventListener("click", () => {
    $("violations").hidden = !$("violations").hidden;
  });
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && !$("modal-layer").hidden) closeModal();
  });

  const link = /^#([A-Z0-9]+)\/p(\d+)$/.exec(location.hash); // from /archives/<C…>/p<ts>
  if (link) {
    ui.channel = link[1];
    ui.focus = link[2];
    history.replaceState(null, "", "/");
  }
  poll();
  setInterval(poll, POLL_MS);
})();
