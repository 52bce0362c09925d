// remotemcp settings page. Plain JS, no build step, no inline scripts
// (the page's Content-Security-Policy allows only this file). Everything a
// server sent (names, reasons, descriptions, questions) is untrusted and is
// only ever put into the page with textContent or attribute setters, never
// as HTML.
"use strict";

(() => {
  const $ = (sel, root = document) => root.querySelector(sel);
  const $$ = (sel, root = document) => Array.from(root.querySelectorAll(sel));

  const state = {
    servers: [],
    grants: { grants: [], pending: [] },
    cards: [],
    confirming: null, // server id whose delete confirmation is open
    catalog: null, // server id whose catalog is shown
    answered: new Set(), // cards answered here, until the live list drops them
    open: new Set(), // "details" boxes the person opened, kept across re-renders
    // Per server, the finished sign-in flow the row shows a note about and
    // the server's state when the page first saw it: a note is about that
    // moment, and goes once the state moves on.
    notes: new Map(),
    // The notice's expiry: a function of a server that says the notice is
    // out of date (the flow it points at has moved on), or null.
    noticeUntil: null,
    bannerKey: null, // what the sign-in banner shows, to rebuild it only on change
  };

  // words is the one code→words table (localapi.Table), which the daemon
  // puts into the page: the CLI says the same from the same table.
  const words = (() => {
    try { return JSON.parse(document.body.dataset.words || "{}"); } catch (e) { return {}; }
  })();
  words.states = words.states || {};
  words.reasons = words.reasons || {};
  words.reasons[""] = words.reasons[""] || { label: "error", cls: "error" };

  // api calls the daemon's JSON API. The browser adds our Origin header
  // and the session cookie (same-origin); the daemon refuses anything else.
  // Paths are relative ("api/…"): the page lives under the daemon's secret
  // prefix (/s/…/), the only place the session cookie is sent to and
  // accepted.
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
    if (!resp.ok) {
      const err = new Error((data && data.error && data.error.message) || `HTTP ${resp.status}`);
      err.data = data && data.error;
      err.status = resp.status;
      throw err;
    }
    return data;
  }

  // notice shows one message above the page. until, when given, is a
  // predicate over a server's live state that ends the message (it was
  // about a step that has since moved on, and the row says what happened).
  function notice(msg, isError, until) {
    const n = $("#notice");
    n.textContent = msg;
    n.classList.toggle("error", !!isError);
    n.hidden = !msg;
    state.noticeUntil = msg && until ? until : null;
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

  // breakable fills node with url as text, one unbreakable piece (an
  // inline block, class seg) per "/"-ended part, so a long URL wraps at
  // its slashes on a narrow screen, not after a hyphen or inside a word;
  // only a part longer than the line wraps inside itself.
  function breakable(node, url) {
    node.textContent = "";
    for (const p of String(url || "").match(/[^/]*\/*|[^/]+$/g).filter((x) => x !== "")) {
      node.append(el("span", { class: "seg", text: p }));
    }
    return node;
  }

  // toolCount is the Tools cell as the CLI's status shows it: the count
  // once the catalog is known, "-" before.
  function toolCount(s) {
    const n = s.state === "ready" || s.toolCount > 0 ? String(s.toolCount) : "-";
    return s.heldTools && s.heldTools.length ? `${n} +${s.heldTools.length} held` : n;
  }

  // safeURL lets only http(s) URLs become links.
  function safeURL(u) {
    try {
      const p = new URL(u);
      return p.protocol === "https:" || p.protocol === "http:" ? p.href : null;
    } catch (e) { return null; }
  }

  // ---- servers ----

  function renderServers() {
    const tbody = $("#server-rows");
    if (state.servers.length === 0) {
      tbody.textContent = "";
      tbody.append(el("tr", { class: "empty" }, el("td", { colSpan: 4, text: "No servers yet: add one or import a config below." })));
      renderBanner();
      return;
    }
    // Every change anywhere re-renders the list. A row that reads the
    // same as before keeps its node, so a click on one of its buttons is
    // not lost when another server's state changes between the press and
    // the release of the mouse button (the page reconciles by server id).
    const before = new Map();
    for (const r of tbody.querySelectorAll(":scope > tr[data-server]")) before.set(r.dataset.server, r);
    const rows = [];
    const tpl = $("#tpl-server");
    for (const s of state.servers) {
      const row = tpl.content.firstElementChild.cloneNode(true);
      row.dataset.server = s.id;
      row.dataset.state = s.state;
      $(".name", row).textContent = s.name || s.id;
      $(".id", row).textContent = s.id;
      breakable($(".url", row), s.url);
      $(".tool-count", row).textContent = toolCount(s);

      const warn = $(".origin-warning", row);
      warn.hidden = s.originGranted;
      breakable($(".origin", warn), s.origin);
      $("button", warn).dataset.origin = s.origin;

      // The sign-in note first: when it asks for an origin, the list of
      // waiting approvals below leaves that origin out (one message each).
      const asked = renderAuthFlow($(".auth-flow", row), s);
      const pend = $(".server-pending", row);
      for (const p of s.pending || []) {
        if (p.origin === s.origin && !s.originGranted) continue; // said above
        if (p.origin === asked) continue; // the sign-in note asks for it
        pend.append(el("li", { "data-origin": p.origin },
          "Waiting for your approval: ", breakable(el("code"), p.origin), ` (${purposeWords(p.purpose)}) `,
          el("button", { type: "button", class: "small", "data-action": "grant", "data-origin": p.origin, text: "Approve" }), " ",
          el("button", { type: "button", class: "small", "data-action": "dismiss", "data-origin": p.origin, text: "Dismiss" })));
      }

      // A sign-in cannot succeed while an origin it needs waits for the
      // person: then the hint says to allow it first.
      const said = stateWords(s, !!asked || pend.children.length > 0);
      const st = $(".state", row);
      st.textContent = said.label;
      st.className = "state state-" + said.cls;
      st.title = s.state; // the API's own word, for bug reports
      $(".state-hint", row).textContent = (said.hint || "") + retryWords(s);
      renderDetails($("td.state-cell > details.reason", row), s.reason ? describeReason(s.reason) : "", s.id + ":state");

      const show = (action, on) => { $(`button[data-action="${action}"]`, row).hidden = !on; };
      // An idle server has no session (it wakes on use): Connect wakes it now.
      const live = s.state === "ready" || s.state === "connecting" || s.state === "reconnecting";
      const signIn = !!(s.auth && (s.auth.kind === "oauth" || s.auth.kind === "auto"));
      // A server waiting for a sign-in is paused until the person signs
      // in: Authorize is the one thing to do, Connect would only fail.
      show("connect", s.enabled && !live && !(signIn && s.state === "needs-auth"));
      show("disconnect", live);
      show("enable", !s.enabled);
      show("disable", s.enabled);
      show("catalog", s.enabled);
      show("log", true);
      show("authorize", signIn);
      // A gateway's shared server is the admins' to remove: its person
      // may only hide it (Disable).
      show("delete", !s.shared);
      renderSettings($("details.settings", row), s);
      const confirm = $(".confirm", row);
      $(".confirm-name", confirm).textContent = s.name || s.id;
      confirm.hidden = state.confirming !== s.id;
      const prev = before.get(s.id);
      rows.push(prev && prev.outerHTML === row.outerHTML ? prev : row);
    }
    rows.forEach((r, i) => {
      const at = tbody.children[i];
      if (at !== r) tbody.insertBefore(r, at || null);
    });
    while (tbody.children.length > rows.length) tbody.lastElementChild.remove();
    for (const id of state.notes.keys()) {
      if (!state.servers.some((s) => s.id === id)) state.notes.delete(id);
    }
    if (state.noticeUntil && state.servers.some((s) => state.noticeUntil(s))) notice("");
    renderBanner();
  }

  // ---- the sign-in banner (B2) ----

  // authWhy says in the page's words why a server waits for the person's
  // sign-in, from the reason's code (SPEC §9 A1, A4) and the scopes it
  // asks for: the Why of the words table (localapi.Table), which the
  // daemon's desktop notification says too.
  function authWhy(r) {
    r = r || {};
    const scopes = (r.scopes || []).join(" ");
    const w = reasonWords(r, "");
    return (w.why || words.reasons[""].why) + (scopes ? " (" + scopes + ")" : "");
  }

  // flowBusy reports whether a sign-in of the server is under way.
  function flowBusy(s) {
    const p = s.authorization && s.authorization.phase;
    return p === "starting" || p === "waiting" || p === "exchanging";
  }

  // originWaits reports whether a sign-in of the server cannot succeed
  // yet because an origin it needs waits for the person's approval (the
  // row says which, beside the server's name).
  function originWaits(s) {
    const f = s.authorization;
    if (!s.originGranted) return true;
    if (f && f.phase === "failed" && f.permission && !isGranted(f.permission.origin)) return true;
    return (s.pending || []).some((p) => !isGranted(p.origin));
  }

  // renderBanner lists, above everything, the servers paused until the
  // person signs in, each with its own Authorize button (the row's
  // action). It is rebuilt only when what it says changes, so that a
  // screen reader hears it once and a button under the pointer stays.
  function renderBanner() {
    const waiting = state.servers.filter((s) => s.enabled && s.state === "needs-auth");
    const key = JSON.stringify(waiting.map((s) => [s.id, s.name, s.reason, flowBusy(s), originWaits(s)]));
    if (key === state.bannerKey) return;
    state.bannerKey = key;
    const list = $("#auth-banner-list");
    list.textContent = "";
    for (const s of waiting) {
      list.append(el("li", { "data-server": s.id },
        el("strong", { class: "name", text: s.name || s.id }), " ",
        s.name && s.name !== s.id ? el("code", { class: "id", text: s.id }) : null, s.name && s.name !== s.id ? " " : null,
        `needs you to sign in: ${authWhy(s.reason)}.`,
        flowBusy(s) ? el("span", { class: "banner-busy", text: " A sign-in is under way." }) : null,
        originWaits(s) ? el("span", { class: "banner-busy", text: " Allow the origin beside the server's name first." }) : null, " ",
        el("button", { type: "button", "data-action": "authorize", "data-server": s.id, text: "Authorize" })));
    }
    const many = waiting.length > 1;
    $("#auth-banner-title").textContent = many ? `${waiting.length} servers need you to sign in` : "A server needs you to sign in";
    $("#auth-banner-hint").textContent = (many ? "They are" : "It is") + " paused: nothing is retried against " + (many ? "them" : "it") + " until you sign in.";
    $("#auth-banner").hidden = waiting.length === 0;
  }

  // describeReason is the technical detail of a failure, kept behind a
  // "details" toggle: the class, step and status codes, then the message.
  // retryWords says when a failed server's backoff tries again (issue
  // #20 item 1); the Connect button tries now.
  function retryWords(s) {
    // A server waiting for its sign-in is not tried again: Authorize is
    // what moves it.
    if (!s.retryAt || s.state === "ready" || s.state === "needs-auth") return "";
    const at = new Date(s.retryAt);
    if (isNaN(at) || at <= Date.now()) return "";
    return " Not tried again before " + at.toLocaleTimeString() + "; Connect tries now.";
  }

  function describeReason(r) {
    let t = r.class || "";
    if (r.step) t += ", " + r.step;
    if (r.httpStatus) t += ", HTTP " + r.httpStatus;
    return redact((t ? t + ": " : "") + (r.message || ""));
  }

  // redact drops the query, fragment and user info of every URL in a
  // detail: error chains quote request URLs, whose query may carry an
  // authorization request's state or a code. (The daemon already scrubs
  // every secret it knows of from what it sends.)
  function redact(text) {
    return text.replace(/\b(https?:\/\/)(?:[^\s"'@\/]*@)?([^\s"'?#]*)(?:[?#][^\s"']*)?/g, "$1$2");
  }

  // renderSettings lists a server's settings read-only (the API's view;
  // the CLI edits them): the page shows what the engine will do.
  function renderSettings(box, s) {
    const dl = $(".settings-list", box);
    dl.textContent = "";
    const add = (term, value) => {
      if (value === undefined || value === null || value === "") return;
      dl.append(el("dt", { text: term }), el("dd", { text: String(value) }));
    };
    add("connect", s.connectOnStartup ? "at startup" : "on first use");
    add("tool timeout", s.toolTimeout || "60s (default)");
    add("idle timeout", s.idleTimeout === "0s" ? "never hibernates" : s.idleTimeout);
    add("approval (MCP hosts)", s.approval === "ask" ? "ask: remotemcp asks before each call" : "host: the host's approval counts");
    add("trusted", s.trusted ? "yes: hosts see its tool annotations" : "no: its tool annotations are dropped");
    add("pinned tools", (s.pinnedTools || []).join(", "));
    add("disabled tools", (s.disabledTools || []).join(", "));
    add("protocol version", s.protocolVersion || "default");
    add("log level", s.logLevel || "warning (default)");
    add("headers", (s.headerNames || []).length ? s.headerNames.join(", ") + " (values sealed)" : "");
    const limits = Object.entries(s.limits || {}).filter(([, v]) => v !== 0 && v !== "" && v !== "0s");
    add("limits", limits.map(([k, v]) => k + "=" + v).join(", "));
    const key = s.id + ":settings";
    box.open = state.open.has(key);
    box.ontoggle = () => { if (box.open) state.open.add(key); else state.open.delete(key); };
  }

  // renderDetails fills a collapsed "details" box with a technical
  // message; key keeps it open across re-renders once opened.
  function renderDetails(box, text, key) {
    $(".reason-text", box).textContent = text;
    box.hidden = !text;
    box.open = !!text && state.open.has(key);
    box.ontoggle = () => { if (box.open) state.open.add(key); else state.open.delete(key); };
  }


  // reasonWords are the table's words of a reason r of a server of auth
  // kind kind: by its code (by its class, from a daemon without codes),
  // the variant of the auth kind where they differ.
  function reasonWords(r, kind) {
    const w = words.reasons[r.code || r.class] || words.reasons[""];
    const group = kind === "oauth" || kind === "auto" ? "signin" : kind === "bearer" ? "bearer" : "none";
    return (w.byAuth && w.byAuth[group]) || w;
  }

  // fill puts the values of vars into a words text's {placeholders}.
  function fill(text, vars) {
    return (text || "").replace(/\{(\w+)\}/g, (m, k) => (k in vars ? String(vars[k]) : m));
  }

  // stateWords says a server's state in the page's words, from the API's
  // codes (state, reason code, HTTP status) through the words table, with
  // what to do about it here: the raw error chain goes behind "details",
  // and the CLI's advice (`remotemcp auth login`) never shows (the CLI
  // has its own, from the same table).
  function stateWords(s, originWaits) {
    const pick = (w) => ({ label: w.label, cls: w.cls, hint: w.hint });
    if (!s.enabled) return pick(words.states.disabled || {});
    const r = s.reason || {};
    const st = words.states[s.state];
    if (s.state === "needs-auth" && st) {
      const more = r.scopes && r.scopes.length ? fill(st.scopes, { scopes: r.scopes.join(" ") }) : "";
      return { label: st.label, cls: st.cls, hint: (originWaits ? st.waiting : st.hint) + more };
    }
    if (st) return pick(st);
    // error, or a state this page does not know yet.
    const w = reasonWords(r, s.auth && s.auth.kind);
    let label = w.label;
    if (/\{status\}/.test(label)) {
      label = r.httpStatus ? fill(label, { status: r.httpStatus }) : label.replace(/\s*\([^)]*\{status\}[^)]*\)/, "");
    }
    return { label, cls: w.cls, hint: w.hint };
  }

  // purposeWords says why remotemcp wanted to contact an origin.
  function purposeWords(p) {
    switch (p) {
      case "mcp": return "the MCP server itself";
      case "discovery-PRM": return "finding its authorization server";
      case "discovery-AS": return "reading the authorization server's settings";
      case "registration": return "registering remotemcp with the authorization server";
      case "authorization": return "the sign-in page";
      case "token": return "getting a token";
    }
    return p || "a request";
  }

  // flowStepWords says which part of a sign-in failed.
  function flowStepWords(step) {
    switch (step) {
      case "discovery-PRM":
      case "discovery-AS": return "the authorization server could not be found or read";
      case "registration": return "remotemcp could not register with the authorization server";
      case "authorization": return "the sign-in was not completed";
      case "token": return "the authorization server did not issue a token";
      case "refresh": return "the sign-in could not be renewed";
      case "scope": return "the server asks for more permissions";
    }
    return "";
  }

  function isGranted(origin) {
    return (state.grants.grants || []).some((g) => g.origin === origin);
  }

  // noteIsStale reports whether a finished flow's note is out of date. A
  // failure is about the moment it happened: it goes once the origin it
  // asked for is allowed (Approve, here or elsewhere) or the server's
  // state changes. "Authorized" stays while the server connects, and goes
  // when a later problem has its own words in the state cell.
  function noteIsStale(s, f) {
    let n = state.notes.get(s.id);
    if (!n || n.startedAt !== f.startedAt || n.phase !== f.phase) {
      n = { startedAt: f.startedAt, phase: f.phase, state: s.state };
      state.notes.set(s.id, n);
    }
    // Once out of date, always: the server coming back to the state of
    // the moment (disabled, then enabled) does not make the note true again.
    if (f.phase === "failed") {
      n.stale = n.stale || (f.permission && isGranted(f.permission.origin)) || s.state !== n.state;
    } else {
      // A finished sign-in is followed by a reconnect, whose passing
      // states (the old error, connecting) say nothing about it; the note
      // goes when the server, once ready, falls into trouble again.
      n.sawReady = n.sawReady || s.state === "ready";
      n.stale = n.stale || (n.sawReady && (s.state === "error" || s.state === "needs-auth" || s.state === "disconnected"));
    }
    return n.stale;
  }

  // renderAuthFlow shows the server's latest sign-in, in the page's words;
  // it returns the origin the note asks the person to allow, if any.
  function renderAuthFlow(box, s) {
    const f = s.authorization;
    box.textContent = "";
    box.className = "auth-flow";
    box.hidden = true;
    if (!f) return "";
    if ((f.phase === "done" || f.phase === "failed") && noteIsStale(s, f)) return "";
    box.hidden = false;
    // A sign-in stopped for want of a permission is waiting for the
    // person, not failing: it is shown as the other approvals are.
    box.classList.add(f.phase === "failed" && f.permission ? "needs-permission" : f.phase);
    switch (f.phase) {
      case "starting":
        box.append("Authorization: finding the authorization server…");
        break;
      case "waiting": {
        box.append("Authorization: waiting for you to sign in on the authorization page. ");
        const u = safeURL(f.authorizationUrl);
        if (u) box.append(el("a", { href: u, target: "_blank", rel: "noopener noreferrer", class: "auth-link", text: "Open the authorization page" }));
        break;
      }
      case "exchanging":
        box.append("Authorization: finishing the sign-in…");
        break;
      case "done":
        box.append(f.result && f.result.notNeeded ? "This server needs no authorization." : "Authorized.");
        break;
      case "failed": {
        const p = f.permission;
        if (p) {
          box.append("Authorization needs your permission to contact ", el("code", { text: p.origin }),
            ` (${purposeWords(p.purpose)}). `,
            el("button", { type: "button", class: "small", "data-action": "grant", "data-origin": p.origin, text: "Allow " + p.origin }),
            " then click Authorize again.");
        } else {
          const why = flowStepWords(f.step);
          box.append("Authorization failed" + (why ? ": " + why : "") + ". Click Authorize to try again.");
        }
        const d = el("details", { class: "reason" }, el("summary", { text: "details" }), el("div", { class: "reason-text" }));
        box.append(d);
        renderDetails(d, redact(f.error || "unknown error"), s.id + ":flow");
        return p ? p.origin : "";
      }
    }
    return "";
  }

  // ---- grants ----

  function renderGrants() {
    const pb = $("#pending-rows");
    pb.textContent = "";
    if (state.grants.pending.length === 0) {
      pb.append(el("tr", { class: "empty" }, el("td", { colSpan: 5, text: "Nothing is waiting." })));
    }
    for (const p of state.grants.pending) {
      pb.append(el("tr", { "data-origin": p.origin },
        el("td", { "data-label": "Origin" }, breakable(el("code"), p.origin)),
        el("td", { "data-label": "Why", text: purposeWords(p.purpose) }),
        el("td", { "data-label": "Server", text: p.serverId || "" }),
        el("td", { "data-label": "Seen", text: String(p.count) }),
        el("td", { class: "buttons" },
          el("button", { type: "button", "data-action": "grant", "data-origin": p.origin, text: "Approve" }), " ",
          el("button", { type: "button", "data-action": "dismiss", "data-origin": p.origin, text: "Dismiss" }))));
    }
    const gb = $("#grant-rows");
    gb.textContent = "";
    if (state.grants.grants.length === 0) {
      gb.append(el("tr", { class: "empty" }, el("td", { colSpan: 4, text: "No origin is allowed yet." })));
    }
    for (const g of state.grants.grants) {
      gb.append(el("tr", { "data-origin": g.origin },
        el("td", { "data-label": "Origin" }, breakable(el("code"), g.origin)),
        el("td", { "data-label": "Allowed by", text: g.by }),
        el("td", { "data-label": "Since", text: new Date(g.grantedAt).toLocaleString() }),
        el("td", { class: "buttons" }, el("button", { type: "button", class: "danger", "data-action": "revoke", "data-origin": g.origin, text: "Revoke" }))));
    }
  }

  // ---- elicitation cards ----

  // renderCards adds new pending cards and removes answered ones, but never
  // rebuilds a card that is still open: the person may be typing into it.
  function renderCards() {
    const box = $("#cards");
    const pending = state.cards.filter((c) => (c.status === "pending" || (c.status === "interrupted" && !c.resent)) && !state.answered.has(c.id));
    const want = new Set(pending.map((c) => c.id));
    for (const node of $$(".card", box)) {
      if (!want.has(node.dataset.card)) node.remove();
    }
    for (const c of pending.slice().reverse()) { // oldest first
      if ($(`.card[data-card="${CSS.escape(c.id)}"]`, box)) continue;
      box.append(buildCard(c));
    }
    const empty = $("p.empty", box);
    if (pending.length === 0 && !empty) box.append(el("p", { class: "empty", text: "No open questions." }));
    if (pending.length > 0 && empty) empty.remove();
  }

  function buildCard(c) {
    if (c.status === "interrupted") return buildInterrupted(c);
    const form = el("form", { class: "card", "data-card": c.id });
    // The server's and the tool's names are the server's: a right-to-left
    // override in them would reorder the line (review finding 4).
    form.append(el("div", { class: "meta", text: `${visible(c.serverId)}${c.tool ? " · tool " + visible(c.tool) : ""} · ${new Date(c.createdAt).toLocaleString()}` }));
    cardAsks(form, c);
    const fields = (c.form && c.form.fields) || [];
    for (const f of fields) form.append(buildField(f));
    form.append(el("div", { class: "problems" }));
    form.append(el("div", { class: "buttons" },
      el("button", { type: "submit", "data-answer": "accept", text: "Accept" }),
      el("button", { type: "button", "data-answer": "decline", text: "Decline" }),
      el("button", { type: "button", "data-answer": "cancel", text: "Cancel" })));
    form.addEventListener("submit", (ev) => { ev.preventDefault(); answerCard(form, c, "accept"); });
    for (const b of $$('button[type="button"]', form)) {
      b.addEventListener("click", () => answerCard(form, c, b.dataset.answer));
    }
    return form;
  }

  // cardAsks shows who asks (issue #20 item 3). remotemcp's own approval
  // question (kind "approval") gives the server, the tool and the call's
  // arguments, whole, in their own elements, then the tool's description
  // apart as the server's words; a server's question comes under a label
  // that names the server, its message quoted, so it cannot pass for
  // remotemcp's approval. Invisible characters are shown, not rendered.
  function cardAsks(box, c) {
    if (c.kind === "approval") {
      box.append(el("p", { class: "asker own", text: "remotemcp asks before sending this call (approval: ask). Accept sends it once; decline sends nothing." }));
      box.append(el("dl", { class: "call" },
        el("dt", { text: "Server" }), el("dd", { class: "server", text: visible(c.serverId) }),
        el("dt", { text: "Tool" }), el("dd", { class: "tool", text: visible(c.tool || "") }),
        el("dt", { text: "Arguments" }), el("dd", {}, el("pre", { class: "arguments", text: argumentsText(c.arguments) }))));
      if (c.description) {
        box.append(el("p", { class: "asker", text: "The server's description of the tool (its own words, not remotemcp's):" }));
        box.append(el("blockquote", { class: "description", text: visible(c.description) }));
      }
      return;
    }
    box.append(el("p", { class: "asker server", text: `Question from MCP server "${visible(c.serverId)}" (its own words below, not remotemcp's):` }));
    box.append(el("blockquote", { text: visible(c.message) }));
  }

  // hidden matches what shows nothing: format characters (tag characters,
  // zero-width and bidi ones), other controls, line and
  // paragraph separators, the Hangul fillers, the braille blank, variation
  // selectors and Mongolian free variation selectors (tab, line feed and
  // carriage return stay): agent.Hidden's set (review finding 5).
  const hidden = /[\p{Cf}\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\u2028\u2029\u115F\u1160\u3164\uFFA0\u2800\u180B-\u180F\uFE00-\uFE0F\u{E0100}-\u{E01EF}]/gu;
  const pictograph = /\p{Extended_Pictographic}/u;

  // visible writes each hidden character of s as [U+XXXX], but for what
  // draws an emoji, as agent.ShowHidden keeps it: variation selector 16
  // right after an emoji (or after a keycap's digit, '#' or '*' before
  // U+20E3), and a zero-width joiner between two emoji.
  function visible(s) {
    return String(s).replace(hidden, (ch, at, str) => {
      const prev = at > 0 ? Array.from(str.slice(Math.max(0, at - 2), at)).pop() : "";
      if (ch === "\uFE0F" && (pictograph.test(prev) || (/[0-9#*]/.test(prev) && str[at + 1] === "\u20E3"))) return ch;
      if (ch === "\u200D" && (pictograph.test(prev) || /[\uFE0F\u{1F3FB}-\u{1F3FF}]/u.test(prev)) &&
        pictograph.test(Array.from(str.slice(at + 1, at + 3))[0] || "")) return ch;
      return "[U+" + ch.codePointAt(0).toString(16).toUpperCase().padStart(4, "0") + "]";
    });
  }
  // The page's other scripts (pins.js) show server text through the same
  // helpers, so what a person reviews is rendered one way.
  window.remotemcpPage = Object.freeze({ el, visible });

  // argumentsText is a call's arguments as indented JSON, hidden
  // characters as JSON escapes (the same value, visibly).
  function argumentsText(a) {
    const s = JSON.stringify(a === undefined ? {} : a, null, 2);
    return s.replace(hidden, (ch) => Array.from({ length: ch.length }, (_, i) => "\\u" + ch.charCodeAt(i).toString(16).padStart(4, "0")).join(""));
  }

  // buildInterrupted shows a call whose question was never answered in
  // time (R6.2): the model was told it failed; the person may re-send it
  // once, after confirming that running the tool again is safe.
  function buildInterrupted(c) {
    const box = el("div", { class: "card interrupted", "data-card": c.id });
    box.append(el("div", { class: "meta", text: `${visible(c.serverId)}${c.tool ? " · tool " + visible(c.tool) : ""} · interrupted` }));
    cardAsks(box, c);
    box.append(el("p", { class: "desc", text: c.reason || "The answer never reached the server." }));
    const btn = el("button", { type: "button", "data-retry": c.id, text: "Re-send the call (I confirm it is safe)" });
    box.append(el("div", { class: "problems" }));
    box.append(el("div", { class: "buttons" }, btn));
    btn.addEventListener("click", async () => {
      btn.disabled = true;
      const what = c.tool ? `${visible(c.tool)} of ${visible(c.serverId)}` : `the call of ${visible(c.serverId)}`;
      notice(`Re-sending ${what}…`);
      try {
        const res = await api("POST", `api/cards/${encodeURIComponent(c.id)}/retry`, { confirmed: true });
        state.answered.add(c.id);
        box.remove();
        notice(`Re-sent ${what}: ${outcomeWords(res)}.`, res.isError);
        renderCards();
      } catch (err) {
        btn.disabled = false;
        $(".problems", box).textContent = err.message || String(err);
      }
    });
    return box;
  }

  // outcomeWords says how a re-sent call ended (the model gets the
  // result itself; the page only says what happened).
  function outcomeWords(res) {
    switch (res.outcome) {
      case "ok": return res.isError ? "the server ran it and answered with an error" : "the server ran it and answered";
      case "denied": return "it was denied";
      case "cancelled": return "it was cancelled";
      case "timeout": return "no answer in time; it may have run";
      case "unavailable": return res.maybeExecuted ? "no answer; it may have run" : "the server could not be reached; it did not run";
    }
    return "it ended (" + res.outcome + ")";
  }

  // buildField makes one field of a card. The field's name comes from the
  // server and is kept out of the DOM's named properties: no name or id
  // attribute (a control named "append" or "querySelectorAll" would shadow
  // the form's own methods); collect() finds the control through its
  // wrapper, which keeps the field.
  function buildField(f) {
    const wrap = el("div", { class: "field", "data-field": f.name });
    const label = el("label", { text: (f.title || f.name) + (f.required ? " *" : "") });
    wrap.append(label);
    let input;
    const def = f.default;
    if (f.type === "boolean") {
      input = el("input", { type: "checkbox", checked: def === true });
    } else if (f.type === "array") {
      input = el("div", { class: "multi" });
      (f.enum || []).forEach((v, i) => {
        input.append(el("label", { class: "check" },
          el("input", { type: "checkbox", value: v, checked: Array.isArray(def) && def.includes(v) }),
          " " + ((f.enumTitles && f.enumTitles[i]) || v)));
      });
    } else if (f.enum && f.enum.length) {
      input = el("select");
      if (!f.required) input.append(el("option", { value: "", text: "" }));
      f.enum.forEach((v, i) => input.append(el("option", { value: v, text: (f.enumTitles && f.enumTitles[i]) || v, selected: def === v })));
    } else {
      const type = f.type === "number" || f.type === "integer" ? "number"
        : f.format === "email" ? "email" : f.format === "uri" ? "url" : f.format === "date" ? "date" : "text";
      input = el("input", { type });
      if (f.type === "integer") input.step = "1";
      if (f.type === "number") input.step = "any";
      if (def !== undefined && def !== null) input.value = String(def);
      if (f.required) input.required = true;
    }
    label.append(input);
    if (f.description) wrap.append(el("span", { class: "desc", text: f.description }));
    wrap.append(el("span", { class: "problem" }));
    wrap._field = f;
    return wrap;
  }

  // collect reads the form; fields left empty are left out, so the
  // server's defaults apply.
  function collect(form) {
    const content = Object.create(null); // a field may be named "__proto__"
    for (const wrap of $$(".field", form)) {
      const f = wrap._field;
      if (f.type === "boolean") {
        content[f.name] = $("input", wrap).checked;
      } else if (f.type === "array") {
        content[f.name] = $$("input:checked", wrap).map((i) => i.value);
      } else {
        const v = $("input, select", wrap).value;
        if (v === "") continue;
        content[f.name] = f.type === "number" || f.type === "integer" ? Number(v) : v;
      }
    }
    return content;
  }

  async function answerCard(form, c, action) {
    for (const p of $$(".problem", form)) p.textContent = "";
    $(".problems", form).textContent = "";
    const body = { action };
    if (action === "accept") body.content = collect(form);
    $$("button", form).forEach((b) => (b.disabled = true));
    try {
      await api("POST", `api/cards/${encodeURIComponent(c.id)}/answer`, body);
      state.answered.add(c.id);
      form.remove();
      notice(`Answered the question of ${visible(c.serverId)} (${action}).`);
      renderCards();
    } catch (err) {
      $$("button", form).forEach((b) => (b.disabled = false));
      const probs = (err.data && err.data.problems) || [];
      for (const p of probs) {
        const w = $(`.field[data-field="${CSS.escape(p.field)}"] .problem`, form);
        if (w) w.textContent = p.problem;
        else $(".problems", form).append(el("div", { class: "problem", text: `${p.field}: ${p.problem}` }));
      }
      if (!probs.length) notice(err.message, true);
    }
  }

  // ---- catalog ----

  // showCatalog lists a server's tools (connecting it if need be), prompts
  // and resources; each part that fails says so on its own.
  async function showCatalog(id) {
    state.catalog = id;
    const sec = $("#catalog-section");
    const box = $("#catalog");
    $("#catalog-title").textContent = id;
    box.textContent = "Loading…";
    sec.hidden = false;
    // The catalog is far below the row's button (on a phone, screens
    // below): bring it into view.
    sec.scrollIntoView({ block: "start" });
    const q = "serverId=" + encodeURIComponent(id);
    const [tools, prompts, resources] = await Promise.allSettled([
      api("GET", "api/tools?connect=1&" + q),
      api("GET", "api/prompts?" + q),
      api("GET", "api/resources?" + q),
    ]);
    if (state.catalog !== id) return;
    renderCatalog(id, tools, prompts, resources);
  }

  function renderCatalog(id, tools, prompts, resources) {
    const box = $("#catalog");
    box.textContent = "";
    const srv = state.servers.find((x) => x.id === id);
    const off = new Set((srv && srv.disabledTools) || []);
    // Disabled tools may be left out of the agent's list; they still get
    // a switch.
    const rows = [];
    if (tools.status === "fulfilled") {
      for (const t of tools.value.tools || []) if (t.serverId === id) rows.push(t);
      for (const e of tools.value.errors || []) if (e.serverId === id) box.append(el("p", { class: "reason", text: "tools: " + e.message }));
    }
    for (const name of off) if (!rows.some((t) => t.toolName === name)) rows.push({ toolName: name });
    rows.sort((a, b) => (a.toolName < b.toolName ? -1 : a.toolName > b.toolName ? 1 : 0));
    box.append(el("h3", { text: `Tools (${rows.length})` }));
    if (tools.status === "rejected") box.append(el("p", { class: "reason", text: "Could not list the tools: " + tools.reason.message }));
    for (const t of rows) {
      const sw = el("input", { type: "checkbox", checked: !off.has(t.toolName), "data-tool": t.toolName });
      sw.addEventListener("change", () => switchTool(id, t.toolName, sw));
      const ann = t.annotations ? Object.entries(t.annotations).filter(([k]) => k !== "title").map(([k, v]) => `${k}: ${v}`).join(", ") : "";
      box.append(el("div", { class: "catalog-tool", "data-tool-row": t.toolName },
        el("label", { class: "switch" }, sw, " ", t.title ? `${t.title} (${t.toolName})` : t.toolName),
        t.description ? el("div", { class: "desc", text: t.description }) : null,
        ann ? el("div", { class: "ann", text: "server hints (display only): " + ann }) : null));
    }
    const pl = el("ul");
    if (prompts.status === "fulfilled") {
      for (const p of prompts.value) pl.append(el("li", { text: `${p.command}${p.description ? " — " + p.description : ""}` }));
    }
    box.append(el("h3", { text: `Prompts (${pl.children.length})` }), pl);
    if (prompts.status === "rejected") box.append(el("p", { class: "reason", text: "Could not list the prompts: " + prompts.reason.message }));
    const rl = el("ul");
    if (resources.status === "fulfilled") {
      for (const r of resources.value) rl.append(el("li", { text: `${r.uri}${r.name ? " — " + r.name : ""}` }));
    }
    box.append(el("h3", { text: `Resources (${rl.children.length})` }), rl);
    if (resources.status === "rejected") box.append(el("p", { class: "reason", text: "Could not list the resources: " + resources.reason.message }));
  }

  async function switchTool(server, tool, sw) {
    sw.disabled = true;
    try {
      await api("POST", `api/servers/${encodeURIComponent(server)}/tools`, { tool, enabled: sw.checked });
      notice(`${tool} is now ${sw.checked ? "on" : "off"} for agents.`);
    } catch (err) {
      sw.checked = !sw.checked;
      notice(err.message, true);
    } finally {
      sw.disabled = false;
    }
  }

  // syncCatalogSwitches keeps open switches in line with disabledTools
  // changed elsewhere (the CLI, another tab).
  function syncCatalogSwitches() {
    if (!state.catalog) return;
    const s = state.servers.find((x) => x.id === state.catalog);
    if (!s) {
      $("#catalog-section").hidden = true;
      state.catalog = null;
      return;
    }
    const off = new Set(s.disabledTools || []);
    for (const sw of $$("#catalog input[data-tool]")) {
      if (!sw.disabled) sw.checked = !off.has(sw.dataset.tool);
    }
  }

  // ---- actions ----

  async function serverAction(id, action) {
    const path = `api/servers/${encodeURIComponent(id)}`;
    switch (action) {
      case "connect":
        notice(`Connecting ${id}…`);
        try {
          await api("POST", path + "/connect");
          notice(`${id} is connected.`);
        } catch (err) {
          if (err.data && err.data.code === "permission_required") {
            notice(`${id}: ${err.data.permission.origin} needs your approval first (see beside the server).`, true);
          } else if (err.data && err.data.server) {
            notice(""); // the server's row says what failed and what to do, once
          } else throw err;
        }
        return;
      case "disconnect":
        await api("POST", path + "/disconnect");
        notice(`${id} is disconnected.`);
        return;
      case "enable":
      case "disable":
        await api("POST", path + "/" + action);
        return;
      case "catalog":
        return showCatalog(id);
      case "log":
        return openLog(id);
      case "edit":
        return openEdit(id);
      case "authorize": {
        notice(`Starting the authorization of ${id}…`);
        let f;
        try {
          f = await api("POST", path + "/authorize");
        } catch (err) {
          // A flow that failed is the server's latest flow: its row says
          // what failed and what to do, once. Anything else (the server
          // is gone, remotemcp is closing) has no row to say it.
          if (err.data && (err.data.code === "permission_required" || err.status === 502)) {
            notice("");
            return;
          }
          throw err;
        }
        // The notice is about this flow: it goes when the flow moves on
        // (the row then shows the outcome).
        const moved = (s) => s.id === id && s.authorization && (
          new Date(s.authorization.startedAt) > new Date(f.startedAt) ||
          (s.authorization.startedAt === f.startedAt && (s.authorization.phase === "done" || s.authorization.phase === "failed")));
        if (f.phase === "done") {
          notice(f.result && f.result.notNeeded ? `${id} needs no authorization.` : `${id} is authorized.`);
        } else if (f.phase === "failed") {
          notice("");
        } else if (f.authorizationUrl && safeURL(f.authorizationUrl)) {
          // A new tab without a handle back to this page.
          window.open(safeURL(f.authorizationUrl), "_blank", "noopener,noreferrer");
          notice(`Finish the authorization of ${id} in the new tab (or use the link beside the server).`, false, moved);
        } else {
          notice(`The authorization of ${id} is starting; the server list shows its progress.`, false, moved);
        }
        return;
      }
      case "delete":
        state.confirming = id;
        renderServers();
        return;
      case "cancel-delete":
        state.confirming = null;
        renderServers();
        return;
      case "confirm-delete":
        state.confirming = null;
        await api("DELETE", path);
        notice(`${id} was deleted.`);
        return;
    }
  }

  async function originAction(origin, action) {
    switch (action) {
      case "grant":
        await api("POST", "api/grants", { origin });
        notice(`${origin} is allowed.`);
        break;
      case "dismiss":
        await api("POST", "api/pending/dismiss", { origin });
        break;
      case "revoke":
        await api("POST", "api/grants/revoke", { origin });
        notice(`${origin} is no longer allowed.`);
        break;
    }
    await refreshGrants();
  }

  // refreshGrants reads the grants and pending approvals now; the event
  // stream brings them too, a moment later.
  async function refreshGrants() {
    const [grants, pending] = await Promise.all([api("GET", "api/grants"), api("GET", "api/pending")]);
    state.grants = { grants: grants || [], pending: pending || [] };
    renderGrants();
    renderServers(); // a sign-in note asking for an origin now allowed goes
  }

  document.addEventListener("click", async (ev) => {
    const b = ev.target.closest("button[data-action]");
    if (!b) return;
    const action = b.dataset.action;
    if (action === "close-catalog") {
      state.catalog = null;
      $("#catalog-section").hidden = true;
      return;
    }
    b.disabled = true;
    try {
      if (b.dataset.origin) {
        await originAction(b.dataset.origin, action);
      } else {
        // A row's buttons act on its server; the banner's name theirs.
        const row = b.closest("tr[data-server]");
        const id = b.dataset.server || (row && row.dataset.server);
        if (id) await serverAction(id, action);
      }
    } catch (err) {
      notice(err.message, true);
    } finally {
      b.disabled = false;
    }
  });

  // ---- a server's settings ----

  // openEdit shows the settings of a server in a dialog, as the API last
  // gave them. Saving sends only what was changed, with the revision the
  // form was filled from: an edit made meanwhile elsewhere (the CLI,
  // another tab) is not overwritten; the form then shows the new values.
  function openEdit(id) {
    const s = state.servers.find((x) => x.id === id);
    if (!s) return;
    fillEdit(s);
    editError("");
    $("#edit-dialog").showModal();
    $("#edit-form").elements.name.focus();
  }

  function fillEdit(s) {
    const f = $("#edit-form");
    state.editing = s;
    $(".edit-name", f).textContent = s.name || s.id;
    const e = f.elements;
    e.name.value = s.name || "";
    e.connectOnStartup.checked = !!s.connectOnStartup;
    e.toolTimeout.value = s.toolTimeout || "";
    e.idleTimeout.value = s.idleTimeout || "";
    e.approval.value = s.approval === "ask" ? "ask" : "host";
    e.trusted.checked = !!s.trusted;
    e.logLevel.value = s.logLevel || "";
  }

  function editError(msg) {
    const p = $("#edit-dialog .edit-error");
    p.textContent = msg;
    p.hidden = !msg;
  }

  $("#edit-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const s = state.editing;
    if (!s) return;
    const e = ev.target.elements;
    const body = { revision: s.revision };
    const text = (name, was) => {
      const v = e[name].value.trim();
      if (v !== (was || "")) body[name] = v;
    };
    text("name", s.name);
    text("toolTimeout", s.toolTimeout);
    text("idleTimeout", s.idleTimeout);
    if (e.connectOnStartup.checked !== !!s.connectOnStartup) body.connectOnStartup = e.connectOnStartup.checked;
    if (e.approval.value !== (s.approval === "ask" ? "ask" : "host")) body.approval = e.approval.value;
    if (e.trusted.checked !== !!s.trusted) body.trusted = e.trusted.checked;
    if (e.logLevel.value !== (s.logLevel || "")) body.logLevel = e.logLevel.value;
    const save = $("button[type=submit]", ev.target);
    save.disabled = true;
    try {
      if (Object.keys(body).length > 1) {
        await api("PATCH", `api/servers/${encodeURIComponent(s.id)}`, body);
        notice(`${s.id}: settings saved.`);
      }
      $("#edit-dialog").close();
    } catch (err) {
      if (err.data && err.data.field === "revision") {
        try {
          const now = await api("GET", `api/servers/${encodeURIComponent(s.id)}`);
          if (now) fillEdit(now);
        } catch (e2) { /* the message below still holds */ }
        editError("The settings were changed elsewhere meanwhile; the form now shows them. Make your change again and save.");
      } else {
        editError(err.message);
      }
    } finally {
      save.disabled = false;
    }
  });
  $("#edit-dialog .edit-cancel").addEventListener("click", () => $("#edit-dialog").close());
  $("#edit-dialog").addEventListener("close", () => { state.editing = null; });

  // ---- request log (B1) ----

  // The drawer shows a server's last 50 HTTP exchanges, newest first, as
  // the API gives them (metadata only, already redacted), and reads them
  // again every few seconds while it is open.
  const LOG_POLL_MS = 3000;
  const logView = { id: null, entries: [], key: null, timer: null, seq: 0 };

  async function openLog(id) {
    const d = $("#log-drawer");
    const s = state.servers.find((x) => x.id === id);
    logView.id = id;
    logView.entries = [];
    logView.key = null;
    $("#log-server").textContent = (s && s.name) || id;
    $("#log-rows").textContent = "";
    $("#log-status").textContent = "Loading…";
    if (!d.open) d.showModal();
    clearInterval(logView.timer);
    logView.timer = setInterval(() => {
      if (document.visibilityState === "visible") loadLog().catch(() => {});
    }, LOG_POLL_MS);
    await loadLog();
  }

  function closeLog() {
    clearInterval(logView.timer);
    logView.timer = null;
    logView.id = null;
    const d = $("#log-drawer");
    if (d.open) d.close();
  }
  $("#log-drawer").addEventListener("close", () => { if (logView.id) closeLog(); });

  // loadLog reads the open server's log and shows it; it returns the
  // entries as the API sent them (null when the drawer moved on).
  async function loadLog() {
    const id = logView.id;
    if (!id) return null;
    const seq = ++logView.seq;
    let entries;
    try {
      entries = (await api("GET", `api/servers/${encodeURIComponent(id)}/log`)) || [];
    } catch (err) {
      if (logView.id === id && seq === logView.seq) $("#log-status").textContent = "Could not read the log: " + err.message;
      throw err;
    }
    // A slower, older answer never replaces a newer one.
    if (logView.id !== id || seq !== logView.seq) return null;
    logView.entries = entries;
    renderLog();
    const n = entries.length;
    $("#log-status").textContent = `${n} exchange${n === 1 ? "" : "s"} · updated ${clock(new Date())}`;
    return entries;
  }

  // clock is a time of day with milliseconds.
  function clock(t) {
    if (isNaN(t)) return "";
    const p = (n, w = 2) => String(n).padStart(w, "0");
    return `${p(t.getHours())}:${p(t.getMinutes())}:${p(t.getSeconds())}.${p(t.getMilliseconds(), 3)}`;
  }

  // requestCell says what an exchange was: its kind and step when the
  // entry has them (the sign-in's discovery, registration and token
  // requests), then the JSON-RPC method, or what a request without one
  // is for.
  function requestCell(e) {
    const td = el("td", { "data-label": "Request" });
    for (const tag of [e.kind, e.step, e.level]) {
      if (typeof tag === "string" && tag) td.append(el("span", { class: "tag", text: tag }), " ");
    }
    // A server's log message (kind "log"): its text, as text.
    if (typeof e.message === "string" && e.message) td.append(el("span", { class: "log-message", text: e.message }));
    if (typeof e.url === "string" && e.url) td.append(el("code", { text: e.url }));
    if (e.rpcMethod) td.append(el("code", { text: e.rpcMethod }));
    else if (!e.kind && !e.step) {
      const what = e.httpMethod === "GET" ? "event stream" : e.httpMethod === "DELETE" ? "end of session" : "—";
      td.append(el("span", { class: "muted", text: what }));
    }
    return td;
  }

  function renderLog() {
    const key = JSON.stringify(logView.entries);
    if (key === logView.key) return; // nothing new: leave a selection alone
    logView.key = key;
    const tbody = $("#log-rows");
    tbody.textContent = "";
    if (logView.entries.length === 0) {
      tbody.append(el("tr", { class: "empty" }, el("td", { colSpan: 7, text: "No exchanges recorded yet." })));
      return;
    }
    for (const e of logView.entries.slice().reverse()) { // newest first
      const failed = !!e.error || e.status >= 400;
      const t = new Date(e.at);
      tbody.append(el("tr", { class: failed ? "failed" : "" },
        el("td", { "data-label": "Time" }, el("time", { dateTime: e.at || "", title: isNaN(t) ? "" : t.toLocaleString(), text: clock(t) || String(e.at || "") })),
        el("td", { "data-label": "Connection" }, el("code", { text: e.connectionId || "—" })),
        el("td", { "data-label": "HTTP", text: e.httpMethod || "" }),
        requestCell(e),
        el("td", { "data-label": "Status", class: "status", text: e.status ? String(e.status) : "—" }),
        el("td", { "data-label": "ms", class: "ms", text: typeof e.ms === "number" ? e.ms.toFixed(1) : "" }),
        el("td", { "data-label": "Error", class: "error", text: e.error || "" })));
    }
  }

  // goJSON is JSON as Go's encoder writes it for `remotemcp logs ID
  // --json`: two-space indent, no HTML escaping, U+2028 and U+2029
  // escaped, a final newline. The export is then the same bytes as the
  // command's output for the same log.
  function goJSON(v) {
    return JSON.stringify(v, null, 2).replace(/[\u2028\u2029]/g, (c) => "\\u" + c.charCodeAt(0).toString(16)) + "\n";
  }

  // exportLog reads the log afresh, shows it, and saves exactly that as a
  // JSON file, built here from the API's answer (a Blob behind a
  // download link: nothing is inlined, so the CSP holds).
  async function exportLog() {
    const id = logView.id;
    const entries = await loadLog();
    if (!entries || logView.id !== id) return;
    const name = `remotemcp-log-${id}-${new Date().toISOString().replace(/\.\d+Z$/, "Z").replace(/:/g, "")}.json`;
    const url = URL.createObjectURL(new Blob([goJSON(entries)], { type: "application/json" }));
    const a = el("a", { href: url, download: name, hidden: true });
    $("#log-drawer").append(a); // inside the modal drawer, where clicks count
    a.click();
    setTimeout(() => { URL.revokeObjectURL(url); a.remove(); }, 10000);
    $("#log-status").textContent = `Exported ${entries.length} exchange${entries.length === 1 ? "" : "s"} as ${name}.`;
  }

  $("#log-drawer").addEventListener("click", async (ev) => {
    const b = ev.target.closest("button[data-page-action]");
    if (!b) return;
    b.disabled = true;
    try {
      switch (b.dataset.pageAction) {
        case "log-close": closeLog(); break;
        case "log-refresh": await loadLog(); break;
        case "log-export": await exportLog(); break;
      }
    } catch (err) {
      $("#log-status").textContent = err.message;
    } finally {
      b.disabled = false;
    }
  });

  // ---- forms ----

  const addForm = $("#add-form");
  const syncAuthFields = () => {
    const kind = addForm.elements.auth.value;
    for (const l of $$("[data-auth]", addForm)) l.hidden = l.dataset.auth !== kind;
  };
  addForm.elements.auth.addEventListener("change", syncAuthFields);
  syncAuthFields();
  addForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const f = addForm.elements;
    const body = { id: f.id.value.trim(), name: f.name.value.trim(), url: f.url.value.trim(), auth: f.auth.value, connectOnStartup: f.connectOnStartup.checked };
    if (body.auth === "bearer") body.token = f.token.value;
    if (body.auth === "oauth") {
      if (f.clientId.value.trim()) body.clientId = f.clientId.value.trim();
      if (f.clientSecret.value) body.clientSecret = f.clientSecret.value;
      const scopes = f.scopes.value.split(/\s+/).filter(Boolean);
      if (scopes.length) body.scopes = scopes;
    }
    try {
      const res = await api("POST", "api/servers", body);
      const granted = (res.granted || []).length ? `; allowed ${res.granted.join(", ")}` : "";
      notice(`Added ${res.server.id}${granted}.`);
      addForm.reset();
      syncAuthFields();
    } catch (err) {
      notice(err.message, true);
    } finally {
      // The token field is cleared either way: it must not linger in the page.
      f.token.value = "";
      f.clientSecret.value = "";
    }
  });

  const importForm = $("#import-form");
  importForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const out = $("#import-result");
    out.textContent = "";
    try {
      const res = await api("POST", "api/servers/import", { config: importForm.elements.config.value });
      const ul = el("ul");
      const list = (entries, kind, text) => {
        for (const e of entries || []) ul.append(el("li", { class: kind, "data-import": kind, "data-id": e.id || "", text: text(e) }));
      };
      list(res.added, "added", (a) => `added ${a.id} (${a.url})`);
      list(res.updated, "updated", (a) => `updated ${a.id} (${a.url})`);
      list(res.unchanged, "unchanged", (a) => `unchanged ${a.id}`);
      list(res.conflicts, "conflict", (c) => `not imported ${c.name || c.id}: ${c.reason}`);
      list(res.skipped, "skipped", (c) => `skipped ${c.name || c.id}: ${c.reason}`);
      const n = (l) => (l || []).length;
      let summary = `${n(res.added)} added, ${n(res.updated)} updated, ${n(res.unchanged)} unchanged, ${n(res.conflicts) + n(res.skipped)} not imported.`;
      if (n(res.granted)) summary += ` Allowed ${res.granted.join(", ")}.`;
      out.append(el("p", { text: summary }), ul);
      if (n(res.added) || n(res.updated)) importForm.reset();
    } catch (err) {
      out.append(el("p", { class: "reason", text: "Import failed: " + err.message }));
    }
  });

  // ---- live updates ----

  function connectEvents() {
    const live = $("#live");
    const es = new EventSource("api/events");
    es.addEventListener("open", () => { live.dataset.state = "live"; live.textContent = "live"; });
    es.addEventListener("error", () => {
      live.dataset.state = "offline";
      live.textContent = "offline — reconnecting…";
    });
    es.addEventListener("servers", (ev) => {
      state.servers = JSON.parse(ev.data) || [];
      if (state.confirming && !state.servers.some((s) => s.id === state.confirming)) state.confirming = null;
      if (logView.id && !state.servers.some((s) => s.id === logView.id)) closeLog();
      renderServers();
      syncCatalogSwitches();
      // pins.js (held tools) listens.
      document.dispatchEvent(new CustomEvent("remotemcp:servers", { detail: state.servers }));
    });
    es.addEventListener("grants", (ev) => {
      state.grants = JSON.parse(ev.data);
      renderGrants();
      renderServers();
    });
    es.addEventListener("cards", (ev) => {
      state.cards = JSON.parse(ev.data) || [];
      renderCards();
    });
  }
  connectEvents();
})();
