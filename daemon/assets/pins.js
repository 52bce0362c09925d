// remotemcp settings page: tools held because their definition changed
// (issue #20 item 3, tool pinning). Kept apart from app.js. Everything
// shown here is server text or JSON, untrusted: it is only ever put into
// the page with textContent, never as HTML.
"use strict";

(() => {
  const $ = (sel, root = document) => root.querySelector(sel);

  function el(tag, props = {}, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props)) {
      if (k === "text") e.textContent = v;
      else if (k === "class") e.className = v;
      else if (k.startsWith("data-")) e.setAttribute(k, v);
      else e[k] = v;
    }
    for (const c of children) if (c) e.append(c);
    return e;
  }

  // api is app.js's: same-origin with the session cookie; the browser
  // sends our Origin on a POST, which the daemon checks (CSRF).
  async function api(method, path, body) {
    const opts = { method, credentials: "same-origin", headers: {} };
    if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    const resp = await fetch(path, opts);
    let data = null;
    try { data = await resp.json(); } catch (e) { /* not JSON */ }
    if (!resp.ok) throw new Error((data && data.error && data.error.message) || `HTTP ${resp.status}`);
    return data;
  }

  let key = null; // the held tools last shown, to fetch only on change

  // load fetches the held changes when the servers' held tools change.
  async function load(servers) {
    const k = JSON.stringify((servers || []).map((s) => [s.id, s.heldTools || []]));
    if (k === key) return;
    key = k;
    try {
      render(await api("GET", "api/held-tools"));
    } catch (err) {
      key = null;
      const box = $("#held");
      if (box) box.replaceChildren(el("p", { class: "reason", text: "Could not read the held tools: " + err.message }));
    }
  }

  function render(held) {
    const section = $("#held-section");
    const box = $("#held");
    if (!section || !box) return;
    section.hidden = held.length === 0;
    box.replaceChildren(...held.map(card));
  }

  // card shows one held change: which tool, the changes (old and new
  // text apart, each in its own element), and Accept.
  function card(h) {
    const box = el("div", { class: "card held-card", "data-held": `${h.serverId}/${h.tool}` });
    box.append(el("div", { class: "meta", text: `${h.serverId} · tool ${h.tool} · changed ${new Date(h.seen).toLocaleString()}` }));
    const list = el("dl", { class: "held-changes" });
    for (const c of h.changes || []) {
      list.append(el("dt", { text: `${c.path} ${c.kind}` }));
      const dd = el("dd");
      if (c.old) dd.append(el("div", { class: "held-old" }, el("span", { class: "label", text: "old" }), el("pre", { text: c.old })));
      if (c.new) dd.append(el("div", { class: "held-new" }, el("span", { class: "label", text: "new" }), el("pre", { text: c.new })));
      list.append(dd);
    }
    box.append(list);
    const problems = el("div", { class: "problems" });
    const btn = el("button", { type: "button", "data-accept": `${h.serverId}/${h.tool}`, text: "Accept the new definition" });
    btn.addEventListener("click", async () => {
      btn.disabled = true;
      try {
        // expect: only the definition shown here is accepted.
        await api("POST", `api/servers/${encodeURIComponent(h.serverId)}/held-tools/accept`,
          { tools: [h.tool], expect: { [h.tool]: h.newHash } });
        box.remove();
        key = null;
        if (!$("#held .held-card")) $("#held-section").hidden = true;
      } catch (err) {
        btn.disabled = false;
        problems.textContent = err.message || String(err);
      }
    });
    box.append(problems, el("div", { class: "buttons" }, btn));
    return box;
  }

  // app.js announces every servers update.
  document.addEventListener("remotemcp:servers", (ev) => { load(ev.detail); });
})();
