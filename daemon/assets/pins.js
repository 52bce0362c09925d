// remotemcp settings page: tools held because their definition changed
// (issue #20 item 3, tool pinning). Kept apart from app.js. Everything
// shown here is server text or JSON, untrusted: it is only ever put into
// the page with textContent, never as HTML.
"use strict";

(() => {
  const $ = (sel, root = document) => root.querySelector(sel);

  // el and visible are app.js's (window.remotemcpPage, loaded first):
  // every character a person cannot see but a model reads is written as
  // [U+XXXX], so a review shows what the agent would read (issue #20 item
  // 3 review).
  const { el, visible } = window.remotemcpPage;

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
    if (!resp.ok) {
      const err = new Error((data && data.error && data.error.message) || `HTTP ${resp.status}`);
      err.status = resp.status;
      throw err;
    }
    return data;
  }

  let key = null; // the held tools last shown, to fetch only on change
  let last = []; // the servers last announced
  // notices are messages kept for a card across a reload, by server/tool.
  const notices = new Map();

  // load fetches the held changes when the servers' held tools change,
  // or the new definition of one (its hash: the server changed the tool
  // again, and the card must show the new text).
  async function load(servers) {
    last = servers || [];
    const k = JSON.stringify(last.map((s) => [s.id, s.heldTools || [], s.heldHashes || {}, s.unpinnable || {}]));
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
  // text apart, each in its own element), and Accept. A tool that cannot
  // be pinned has nothing to accept: its card says why.
  function card(h) {
    const id = `${h.serverId}/${h.tool}`;
    const box = el("div", { class: "card held-card", "data-held": id });
    if (h.unpinnable) {
      box.append(el("div", { class: "meta", text: `${visible(h.serverId)} · tool ${visible(h.tool)}` }),
        el("p", { class: "reason held-unpinnable", text: visible(h.unpinnable) }));
      return box;
    }
    box.append(el("div", { class: "meta", text: `${visible(h.serverId)} · tool ${visible(h.tool)} · changed ${new Date(h.seen).toLocaleString()}` }));
    const list = el("dl", { class: "held-changes" });
    for (const c of h.changes || []) {
      list.append(el("dt", { text: `${visible(c.path)} ${c.kind}` }));
      const dd = el("dd");
      if (c.old) dd.append(el("div", { class: "held-old" }, el("span", { class: "label", text: "old" }), el("pre", { text: visible(c.old) })));
      if (c.new) dd.append(el("div", { class: "held-new" }, el("span", { class: "label", text: "new" }), el("pre", { text: visible(c.new) })));
      list.append(dd);
    }
    box.append(list, el("div", { class: "meta held-hash", text: `new definition ${h.newHash}` }));
    const problems = el("div", { class: "problems", text: notices.get(id) || "" });
    notices.delete(id);
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
        if (err.status === 409) {
          // The server changed the tool again since this card was made:
          // show the new text, never accept what was not shown.
          notices.set(id, "The server changed this tool again; review the new text.");
          key = null;
          load(last);
          return;
        }
        problems.textContent = err.message || String(err);
      }
    });
    box.append(problems, el("div", { class: "buttons" }, btn));
    return box;
  }

  // app.js announces every servers update.
  document.addEventListener("remotemcp:servers", (ev) => { load(ev.detail); });
})();
