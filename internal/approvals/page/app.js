// The approvals page. It renders the broker's state from a server-sent
// event stream; every value from the server is put into the page with
// textContent, never as HTML.
"use strict";
(function () {
  const token = new URLSearchParams(location.search).get("token") || "";
  const $ = (id) => document.getElementById(id);
  const cards = new Map(); // ask id -> {li, asked, waited}
  let skew = 0; // server clock minus local clock, in ms

  function el(tag, className, text) {
    const e = document.createElement(tag);
    if (className) e.className = className;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  function duration(ms) {
    const s = Math.max(0, Math.floor(ms / 1000));
    if (s < 60) return s + " s";
    const m = Math.floor(s / 60);
    if (m < 60) return m + " min " + (s % 60) + " s";
    return Math.floor(m / 60) + " h " + (m % 60) + " min";
  }

  function ruleText(a) {
    if (!a.rule || a.rule === "default") return "no rule matched; the default is ask";
    return a.gate ? a.rule + "  (in " + a.gate + ")" : a.rule;
  }

  function pretty(args) {
    try { return JSON.stringify(args === undefined ? {} : args, null, 2); } catch (e) { return "(arguments cannot be shown)"; }
  }

  function card(a) {
    const li = el("li", "ask");
    li.dataset.id = a.id;
    const title = el("div");
    title.append(el("span", "tool", a.tool), el("span", "id", "ask " + a.id));
    const dl = el("dl");
    const waited = el("dd", "waited");
    for (const [k, v] of [["Server", a.server], ["Client", a.client || "(unnamed)"], ["Session", a.session || "(none)"], ["Principal", a.principal || "(unknown)"], ["Asked by", ruleText(a)]]) {
      dl.append(el("dt", "", k), el("dd", "", v));
    }
    dl.append(el("dt", "", "Waiting"), waited);
    // The lines the approval form shows (one per argument, keys and values
    // quoted, hidden characters escaped, path forms under them), from the
    // server's one renderer; the raw arguments only from an older server.
    const args = el("pre", "args", a.lines && a.lines.length ? a.lines.join("\n") : pretty(a.arguments));
    const buttons = el("div", "buttons");
    const msg = el("span", "error");
    const hasPaths = a.folders && a.folders.length;
    const choices = [["allow_once", "Allow once"], ["allow_session", hasPaths ? "Allow these paths for session" : "Allow for session"]];
    if (hasPaths) choices.push(["allow_session_folder", "Allow under " + a.folders.join(", ") + " for session"]);
    choices.push(["deny", "Deny"]);
    for (const [decision, label] of choices) {
      const b = el("button", decision, label);
      b.type = "button";
      b.addEventListener("click", () => decide(a.id, decision, buttons, msg));
      buttons.append(b);
    }
    buttons.append(msg);
    li.append(title, dl, el("div", "", "The call in full (credentials in values hidden; every path also in each form mcpwarden decided it on):"), args);
    li.append(buttons);
    return { li: li, asked: Date.parse(a.asked_at), waited: waited };
  }

  async function decide(id, decision, buttons, msg) {
    for (const b of buttons.querySelectorAll("button")) b.disabled = true;
    msg.textContent = "";
    try {
      const res = await fetch("/api/asks/" + encodeURIComponent(id), {
        method: "POST",
        headers: { "Authorization": "Bearer " + token, "Content-Type": "application/json" },
        body: JSON.stringify({ decision: decision, via: "page" }),
        credentials: "omit",
        cache: "no-store",
      });
      if (!res.ok) {
        let text = res.status + " " + res.statusText;
        try { text = (await res.json()).error || text; } catch (e) { /* not JSON */ }
        throw new Error(text);
      }
    } catch (e) {
      msg.textContent = "Not decided: " + e.message;
      for (const b of buttons.querySelectorAll("button")) b.disabled = false;
    }
  }

  function tick() {
    const now = Date.now() + skew;
    for (const c of cards.values()) c.waited.textContent = duration(now - c.asked);
  }

  function render(state) {
    skew = Date.parse(state.now) - Date.now();
    const list = $("pending");
    const seen = new Set();
    for (const a of state.pending) {
      seen.add(a.id);
      if (!cards.has(a.id)) {
        const c = card(a);
        cards.set(a.id, c);
        list.append(c.li);
      }
    }
    for (const [id, c] of cards) {
      if (!seen.has(id)) { c.li.remove(); cards.delete(id); }
    }
    $("pending-count").textContent = String(state.pending.length);
    $("empty").hidden = state.pending.length > 0;
    document.title = (state.pending.length ? "(" + state.pending.length + ") " : "") + "mcpwarden approvals";

    const body = $("recent").tBodies[0];
    const rows = [];
    for (const d of state.recent) {
      const tr = el("tr");
      const waited = Date.parse(d.decided_at) - Date.parse(d.asked_at);
      const by = d.via ? d.via.replace("approval_", "") + (d.who ? " — " + d.who : "") : "";
      tr.append(
        el("td", "", new Date(d.decided_at).toLocaleTimeString()),
        el("td", "mono", d.tool),
        el("td", "", d.client || ""),
        el("td", "outcome-" + d.outcome, d.outcome.replace(/_/g, " ")),
        el("td", "", by),
        el("td", "", duration(waited)));
      rows.push(tr);
    }
    body.replaceChildren(...rows);
    tick();
  }

  function connect() {
    const status = $("status");
    const es = new EventSource("/api/events?token=" + encodeURIComponent(token));
    es.addEventListener("open", () => { status.textContent = "live"; status.className = "status live"; });
    es.addEventListener("error", () => { status.textContent = "disconnected — retrying…"; status.className = "status down"; });
    es.addEventListener("state", (e) => render(JSON.parse(e.data)));
  }

  setInterval(tick, 500);
  connect();
})();
