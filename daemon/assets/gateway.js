// remotemcp gateway page: what a person signed in on a gateway has beyond
// the personal page (app.js): their host tokens, and for admins the
// gateway's people. Loaded only on a gateway's page. As in app.js,
// everything from the daemon goes into the page as text, never as HTML.
"use strict";

(() => {
  const $ = (sel, root = document) => root.querySelector(sel);

  async function api(method, path, body) {
    const opts = { method, credentials: "same-origin", headers: {} };
    if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    const resp = await fetch(path, opts);
    if (resp.status === 204) return null;
    let data = null;
    try { data = await resp.json(); } catch (e) { /* not JSON */ }
    if (!resp.ok) throw new Error((data && data.error && data.error.message) || `HTTP ${resp.status}`);
    return data;
  }

  function notice(msg, isError) {
    const n = $("#notice");
    n.textContent = msg;
    n.classList.toggle("error", !!isError);
    n.hidden = !msg;
  }

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

  // ---- signing out ----

  // A fetch, not a form: the page's no-referrer policy makes a browser
  // send "Origin: null" with a form's POST, which the daemon refuses.
  const signout = $("#signout");
  if (signout) {
    signout.addEventListener("click", async () => {
      signout.disabled = true;
      try {
        await api("POST", "api/logout");
        location.assign("/signed-out");
      } catch (err) {
        notice(err.message, true);
        signout.disabled = false;
      }
    });
  }

  // ---- host tokens ----

  async function refreshTokens() {
    const list = (await api("GET", "api/host-tokens")) || [];
    const tbody = $("#token-rows");
    tbody.textContent = "";
    if (list.length === 0) {
      tbody.append(el("tr", { class: "empty" }, el("td", { colSpan: 3, text: "No tokens yet." })));
      return;
    }
    for (const t of list) {
      const when = t.createdAt ? new Date(t.createdAt).toLocaleString() : "";
      tbody.append(el("tr", { "data-token": t.name },
        el("td", { "data-label": "Name" }, el("code", { text: t.name })),
        el("td", { "data-label": "Created", text: when }),
        el("td", { class: "buttons" }, el("button", { type: "button", class: "small danger", "data-revoke": t.name, text: "Revoke" }))));
    }
  }

  const tokenForm = $("#token-form");
  tokenForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const name = tokenForm.elements.name.value.trim();
    try {
      const t = await api("POST", "api/host-tokens", { name });
      const out = $("#token-new");
      $(".token-name", out).textContent = t.name;
      $(".token-value", out).textContent = t.token;
      out.hidden = false;
      tokenForm.reset();
      await refreshTokens();
    } catch (err) {
      notice(err.message, true);
    }
  });

  $("#token-rows").addEventListener("click", async (ev) => {
    const b = ev.target.closest("button[data-revoke]");
    if (!b) return;
    b.disabled = true;
    try {
      await api("POST", "api/host-tokens/revoke", { name: b.dataset.revoke });
      notice(`Token ${b.dataset.revoke} is revoked: hosts using it are refused from now on.`);
      const out = $("#token-new");
      if ($(".token-name", out).textContent === b.dataset.revoke) out.hidden = true;
      await refreshTokens();
    } catch (err) {
      notice(err.message, true);
      b.disabled = false;
    }
  });

  refreshTokens().catch((err) => notice(err.message, true));

  // ---- people (admins) ----

  const people = $("#people");
  if (!people) return;

  async function refreshPeople() {
    const res = await api("GET", "api/users");
    people.textContent = "";
    for (const u of (res && res.users) || []) {
      people.append(el("li", { "data-email": u.email }, el("span", { text: u.email + " " }),
        el("button", { type: "button", class: "small danger", "data-remove": u.email, text: "Remove" })));
    }
  }

  people.addEventListener("click", async (ev) => {
    const b = ev.target.closest("button[data-remove]");
    if (!b) return;
    if (!window.confirm(`Remove ${b.dataset.remove} and everything of theirs (servers, sign-ins, tokens)?`)) return;
    try {
      await api("DELETE", `api/users/${encodeURIComponent(b.dataset.remove)}`);
      notice(`${b.dataset.remove} was removed.`);
      await refreshPeople();
    } catch (err) {
      notice(err.message, true);
    }
  });

  const peopleForm = $("#people-form");
  peopleForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try {
      const u = await api("POST", "api/users", { email: peopleForm.elements.email.value.trim() });
      notice(`${u.email} may sign in now.`);
      peopleForm.reset();
      await refreshPeople();
    } catch (err) {
      notice(err.message, true);
    }
  });

  refreshPeople().catch((err) => notice(err.message, true));
})();
