// Bob against every local-API route, with Alice's ids (see
// isolation_test.go for what each try must show).

package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/remotemcp/remotemcp/daemon"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
)

// probe is one request on the socket.
type probe struct {
	method, path string
	body         any
	header       map[string]string
	// want is the status Bob gets, with Alice's ids and the ghost's alike.
	want int
	// alice, when set, is the status Alice gets for the same request
	// (sent before Bob's, and only where it changes nothing of hers): the
	// ids are real and the request well-formed, so Bob's 404 is not any
	// caller's.
	alice int
	// stream: the answer is an event stream; read its first events.
	stream bool
	// hold: the answer is a hold stream; read its header only.
	hold bool
}

func get(path string, want int) probe { return probe{method: "GET", path: path, want: want} }

// hers is p with the status Alice gets for it.
func hers(p probe, status int) probe {
	p.alice = status
	return p
}

func post(path string, body any, want int) probe {
	return probe{method: "POST", path: path, body: body, want: want}
}

// routeCase is what Bob tries on one route.
type routeCase struct {
	// probes are Bob's requests with the ids x (Alice's, then the
	// ghost's).
	probes func(w *world, x ids) []probe
	// undo puts Bob's own state back after a request of his that rightly
	// succeeded (his own server called like one of Alice's).
	undo func(w *world, x ids) []probe
	// shows are what Bob's answers must show of his own, so that a
	// listing without Alice's objects is not simply empty.
	shows func(w *world) []string
	// why says, for a route that names no id, why it cannot leak.
	why string
}

func esc(s string) string { return url.PathEscape(s) }

// routeCases has one case for every route of daemon.APIRoutes.
func routeCases() map[string]routeCase {
	bobLists := func(w *world) []string { return []string{w.bobServer} }
	return map[string]routeCase{
		"GET /api/health": {
			why:    "answers the daemon's version, pid and start time only: nobody's data",
			probes: func(w *world, x ids) []probe { return []probe{get("/api/health", 200)} },
		},
		"POST /api/login-url": {
			why:    "a gateway has no settings page yet, so no login URL: the same 404 for everyone",
			probes: func(w *world, x ids) []probe { return []probe{post("/api/login-url", nil, 404)} },
		},
		"GET /api/events": {
			why: "Bob's stream is his engine's events; Alice's changes while it is open are checked not to reach it (events subtest)",
			probes: func(w *world, x ids) []probe {
				return []probe{{method: "GET", path: "/api/events", want: 200, stream: true}}
			},
			shows: bobLists,
		},
		"GET /api/subscriptions/hold": {
			why: "opens a hold stream of Bob's own, which says its new id only; using Alice's hold stream id is tried on POST /api/subscriptions",
			probes: func(w *world, x ids) []probe {
				return []probe{{method: "GET", path: "/api/subscriptions/hold", want: 200, hold: true}}
			},
		},

		"/api/": {
			// What no route matches: "no such API route", echoing only
			// what Bob sent.
			probes: func(w *world, x ids) []probe {
				return []probe{get("/api/servers/"+x.server+"/nothing", 404), post("/api/cards/"+esc(x.card), nil, 404),
					{method: "PUT", path: "/api/calls/" + x.opWait, want: 404}}
			},
		},
		"GET /api/servers": {
			probes: func(w *world, x ids) []probe { return []probe{get("/api/servers", 200)} },
			shows:  bobLists,
		},
		"POST /api/servers": {
			// Bob may call a server of his as Alice calls hers: ids are
			// each person's own, and a conflict would tell him hers exists.
			probes: func(w *world, x ids) []probe {
				return []probe{post("/api/servers", localapi.AddServerRequest{ID: x.server, URL: w.bobFx.URL()}, 201)}
			},
			undo: func(w *world, x ids) []probe {
				return []probe{{method: "DELETE", path: "/api/servers/" + x.server, want: 204}}
			},
		},
		"POST /api/servers/import": {
			probes: func(w *world, x ids) []probe {
				doc := fmt.Sprintf(`{"mcpServers": {%q: {"url": %q}}}`, x.server, w.bobFx.URL())
				return []probe{post("/api/servers/import", localapi.ImportRequest{Config: doc}, 200)}
			},
			undo: func(w *world, x ids) []probe {
				return []probe{{method: "DELETE", path: "/api/servers/" + x.server, want: 204}}
			},
		},
		"GET /api/servers/{id}": {
			probes: func(w *world, x ids) []probe {
				return []probe{hers(get("/api/servers/"+x.server, 404), 200), hers(get("/api/servers/"+x.pins, 404), 200),
					// A value of Alice's secret header, sent by Bob as an
					// id: the answer must not tell him it is a secret of
					// someone's (scrubbed as one).
					get("/api/servers/"+x.secret, 404)}
			},
		},
		"PATCH /api/servers/{id}": {
			probes: func(w *world, x ids) []probe {
				name := "renamed by bob"
				return []probe{{method: "PATCH", path: "/api/servers/" + x.server, body: localapi.UpdateServerRequest{Name: &name}, want: 404}}
			},
		},
		"DELETE /api/servers/{id}": {
			probes: func(w *world, x ids) []probe {
				return []probe{{method: "DELETE", path: "/api/servers/" + x.server, want: 404}}
			},
		},
		"POST /api/servers/{id}/enable": {
			probes: func(w *world, x ids) []probe { return []probe{post("/api/servers/"+x.server+"/enable", nil, 404)} },
		},
		"POST /api/servers/{id}/disable": {
			probes: func(w *world, x ids) []probe { return []probe{post("/api/servers/"+x.server+"/disable", nil, 404)} },
		},
		"POST /api/servers/{id}/tools": {
			probes: func(w *world, x ids) []probe {
				return []probe{post("/api/servers/"+x.server+"/tools", localapi.ToolSwitch{Tool: x.tool, Enabled: false}, 404)}
			},
		},
		"POST /api/servers/{id}/connect": {
			probes: func(w *world, x ids) []probe {
				return []probe{post("/api/servers/"+x.server+"/connect", nil, 404), post("/api/servers/"+x.noGrant+"/connect", nil, 404)}
			},
		},
		"POST /api/servers/{id}/disconnect": {
			probes: func(w *world, x ids) []probe { return []probe{post("/api/servers/"+x.server+"/disconnect", nil, 404)} },
		},
		"GET /api/servers/{id}/log": {
			probes: func(w *world, x ids) []probe { return []probe{hers(get("/api/servers/"+x.server+"/log", 404), 200)} },
		},
		"POST /api/servers/{id}/authorize": {
			probes: func(w *world, x ids) []probe {
				return []probe{post("/api/servers/"+x.server+"/authorize", nil, 404),
					post("/api/servers/"+x.server+"/authorize", localapi.AuthorizeOptions{Reregister: true}, 404)}
			},
		},
		"GET /api/servers/{id}/authorize": {
			probes: func(w *world, x ids) []probe { return []probe{get("/api/servers/"+x.server+"/authorize", 404)} },
		},
		"GET /api/servers/{id}/authorize/wait": {
			probes: func(w *world, x ids) []probe { return []probe{get("/api/servers/"+x.server+"/authorize/wait", 404)} },
		},
		"POST /api/servers/{id}/logout": {
			probes: func(w *world, x ids) []probe { return []probe{post("/api/servers/"+x.server+"/logout", nil, 404)} },
		},
		"GET /api/auth": {
			probes: func(w *world, x ids) []probe {
				return []probe{get("/api/auth", 200), hers(get("/api/auth?serverId="+x.server, 404), 200)}
			},
		},

		"GET /api/grants": {
			probes: func(w *world, x ids) []probe { return []probe{get("/api/grants", 200)} },
			shows:  func(w *world) []string { return []string{originOf(w.bobFx.URL())} },
		},
		"POST /api/grants": {
			// Granting an origin is Bob's own decision, for his servers.
			probes: func(w *world, x ids) []probe {
				return []probe{post("/api/grants", localapi.OriginRequest{Origin: x.origin}, 204)}
			},
			undo: func(w *world, x ids) []probe {
				return []probe{post("/api/grants/revoke", localapi.OriginRequest{Origin: x.origin}, 204)}
			},
		},
		"POST /api/grants/revoke": {
			probes: func(w *world, x ids) []probe {
				return []probe{post("/api/grants/revoke", localapi.OriginRequest{Origin: x.origin}, 404)}
			},
		},
		"GET /api/pending": {
			probes: func(w *world, x ids) []probe { return []probe{get("/api/pending", 200)} },
			shows:  func(w *world) []string { return []string{w.bobPending} },
		},
		"POST /api/pending/dismiss": {
			probes: func(w *world, x ids) []probe {
				return []probe{post("/api/pending/dismiss", localapi.OriginRequest{Origin: x.pending}, 204)}
			},
		},

		"GET /api/host-tokens": {
			probes: func(w *world, x ids) []probe { return []probe{get("/api/host-tokens", 200)} },
			shows:  func(w *world) []string { return []string{"bob-laptop"} },
		},
		"POST /api/host-tokens": {
			// Token names are each person's own: a conflict would tell Bob
			// Alice has one called so.
			probes: func(w *world, x ids) []probe {
				return []probe{post("/api/host-tokens", localapi.HostTokenRequest{Name: x.tokName}, 201)}
			},
			undo: func(w *world, x ids) []probe {
				return []probe{post("/api/host-tokens/revoke", localapi.HostTokenRequest{Name: x.tokName}, 204)}
			},
		},
		"POST /api/host-tokens/revoke": {
			probes: func(w *world, x ids) []probe {
				return []probe{post("/api/host-tokens/revoke", localapi.HostTokenRequest{Name: x.tokName}, 404)}
			},
		},
		"POST /api/host-tokens/check": {
			probes: func(w *world, x ids) []probe {
				return []probe{hers(post("/api/host-tokens/check", localapi.HostTokenRequest{Token: x.token}, 404), 200)}
			},
		},

		"GET /api/tools": {
			probes: func(w *world, x ids) []probe {
				return []probe{get("/api/tools", 200), hers(get("/api/tools?serverId="+x.server, 404), 200), hers(get("/api/tools?serverId="+x.pins+"&connect=1", 404), 200)}
			},
			shows: func(w *world) []string { return []string{"bob_own_tool"} },
		},
		"POST /api/calls": {
			// The call stream starts (200) before the engine answers: the
			// error is its one line. Bob's own call with Alice's operation
			// ids is his own call.
			probes: func(w *world, x ids) []probe {
				return []probe{
					post("/api/calls", localapi.CallRequest{Tool: x.server + "/" + x.tool, Arguments: json.RawMessage(`{}`), Approved: true}, 200),
					post("/api/calls", localapi.CallRequest{Tool: "mcp__" + x.server + "__" + x.tool, Arguments: json.RawMessage(`{}`), Approved: true}, 200),
					post("/api/calls?ask=0", localapi.CallRequest{Tool: x.server + "/echo", Arguments: json.RawMessage(`{"text":"x"}`)}, 200),
					post("/api/calls", localapi.CallRequest{Tool: w.bobServer + "/echo", Arguments: json.RawMessage(`{"text":"bob's"}`), Approved: true, OperationID: x.opWait}, 200),
				}
			},
		},
		"POST /api/calls/{operationId}/approval": {
			probes: func(w *world, x ids) []probe {
				return []probe{
					post("/api/calls/"+x.opWait+"/approval", localapi.ApprovalReply{Decision: localapi.Decision{Approved: false, Reason: "bob says no"}}, 404),
					post("/api/calls/"+x.opAsking+"/approval", localapi.ApprovalReply{Decision: localapi.Decision{Approved: true}}, 404),
				}
			},
		},
		"POST /api/calls/{operationId}/cancel": {
			// Cancelling a call that is not running is no error, for anyone:
			// 204 for every operation id, so the answer tells nothing; that
			// Alice's calls run on is checked by her state and at the end.
			probes: func(w *world, x ids) []probe {
				return []probe{post("/api/calls/"+x.opAsking+"/cancel", nil, 204), post("/api/calls/"+x.opWait+"/cancel", nil, 204),
					post("/api/calls/"+x.opDone+"/cancel", nil, 204)}
			},
		},
		"POST /api/calls/{operationId}/sampling/{id}": {
			probes: func(w *world, x ids) []probe {
				return []probe{post("/api/calls/"+x.opAsking+"/sampling/1", localapi.SamplingReply{Error: "bob"}, 404)}
			},
		},

		"GET /api/cards": {
			probes: func(w *world, x ids) []probe { return []probe{get("/api/cards", 200)} },
			shows:  func(w *world) []string { return []string{w.bobCard} },
		},
		"GET /api/cards/{id}": {
			probes: func(w *world, x ids) []probe { return []probe{hers(get("/api/cards/"+esc(x.card), 404), 200)} },
		},
		"POST /api/cards/{id}/answer": {
			probes: func(w *world, x ids) []probe {
				return []probe{post("/api/cards/"+esc(x.card)+"/answer", localapi.Answer{Action: "accept", Content: map[string]any{"name": "Bob"}}, 404),
					post("/api/cards/"+esc(x.card)+"/answer", localapi.Answer{Action: "decline"}, 404)}
			},
		},
		"POST /api/cards/{id}/retry": {
			probes: func(w *world, x ids) []probe {
				return []probe{post("/api/cards/"+esc(x.card)+"/retry", localapi.RetryRequest{Confirmed: true}, 404)}
			},
		},

		"GET /api/prompts": {
			probes: func(w *world, x ids) []probe {
				return []probe{get("/api/prompts", 200), hers(get("/api/prompts?serverId="+x.server, 404), 200)}
			},
			shows: func(w *world) []string { return []string{"/" + w.bobServer + ":greet"} },
		},
		"POST /api/prompts/get": {
			probes: func(w *world, x ids) []probe {
				return []probe{hers(post("/api/prompts/get", localapi.GetPromptRequest{Command: "/" + x.server + ":" + x.prompt}, 404), 200)}
			},
		},
		"POST /api/complete": {
			probes: func(w *world, x ids) []probe {
				return []probe{hers(post("/api/complete", localapi.CompleteRequest{ServerID: x.server,
					Ref: localapi.CompleteRef{Type: localapi.RefPrompt, Name: "greet"}, Argument: localapi.CompleteArg{Name: "style"}}, 404), 200)}
			},
		},
		"POST /api/log-level": {
			probes: func(w *world, x ids) []probe {
				return []probe{post("/api/log-level", localapi.LogLevelRequest{ServerID: x.server, Level: "debug"}, 404)}
			},
		},
		"POST /api/subscriptions": {
			// With Alice's hold stream named, Bob's request is refused as
			// for any stream that is not (his and) open: 409, as for the
			// ghost's.
			probes: func(w *world, x ids) []probe {
				sub := localapi.ResourceSubscription{ServerID: x.server, URI: x.resource}
				return []probe{post("/api/subscriptions", sub, 404),
					{method: "POST", path: "/api/subscriptions", body: sub, header: map[string]string{localapi.HolderHeader: x.holder}, want: 409}}
			},
		},
		"POST /api/subscriptions/remove": {
			// Giving back a subscription of a hold stream that is not open
			// is no error (the daemon gave it back when the stream
			// ended): 204 for Alice's stream and the ghost's alike.
			probes: func(w *world, x ids) []probe {
				sub := localapi.ResourceSubscription{ServerID: x.server, URI: x.resource}
				return []probe{post("/api/subscriptions/remove", sub, 404),
					{method: "POST", path: "/api/subscriptions/remove", body: sub, header: map[string]string{localapi.HolderHeader: x.holder}, want: 204}}
			},
		},
		"GET /api/resources": {
			probes: func(w *world, x ids) []probe {
				return []probe{get("/api/resources", 200), hers(get("/api/resources?serverId="+x.server, 404), 200),
					get("/api/resources?q="+url.QueryEscape(x.resource), 200)}
			},
			shows: func(w *world) []string { return []string{fixture.ReadmeURI} },
		},
		"POST /api/resources/read": {
			probes: func(w *world, x ids) []probe {
				return []probe{hers(post("/api/resources/read", localapi.ReadRequest{Mention: "@" + x.server + ":" + x.resource}, 404), 200)}
			},
		},
		"GET /api/held-tools": {
			probes: func(w *world, x ids) []probe {
				return []probe{get("/api/held-tools", 200), hers(get("/api/held-tools?server="+x.pins, 404), 200)}
			},
		},
		"POST /api/servers/{id}/held-tools/accept": {
			probes: func(w *world, x ids) []probe {
				return []probe{post("/api/servers/"+x.pins+"/held-tools/accept", localapi.AcceptToolsRequest{Tools: []string{x.held}}, 404),
					post("/api/servers/"+x.pins+"/held-tools/accept", localapi.AcceptToolsRequest{All: true}, 404)}
			},
		},
	}
}

func originOf(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		panic(err)
	}
	return p.Scheme + "://" + p.Host
}

// sent is everything of a probe Bob wrote.
func (p probe) sent() string {
	b, _ := json.Marshal(p.body)
	return p.path + " " + string(b) + " " + fmt.Sprint(p.header)
}

// aliceState is what Alice's engine says of her objects, for comparing
// before and after Bob's requests: every edit bumps a server's revision.
func (w *world) aliceState(t *testing.T) string {
	t.Helper()
	ctx := w.ctx
	var b strings.Builder
	servers, err := w.alice.Servers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range servers {
		fmt.Fprintf(&b, "server %s rev %d enabled %v state %s tools %d disabled %v held %v url %s\n",
			s.ID, s.Revision, s.Enabled, s.State, s.ToolCount, s.DisabledTools, s.HeldHashes, s.URL)
	}
	tools, err := w.alice.Tools(ctx, localapi.ToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		fmt.Fprintf(&b, "tool %s\n", tl.Name)
	}
	grants, err := w.alice.Grants(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range grants {
		fmt.Fprintf(&b, "grant %s\n", g.Origin)
	}
	pending, err := w.alice.Pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pending {
		fmt.Fprintf(&b, "pending %s %s\n", p.Origin, p.ServerID)
	}
	toks, err := w.alice.HostTokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range toks {
		fmt.Fprintf(&b, "token %s\n", tk.Name)
	}
	if tk, err := w.alice.CheckHostToken(ctx, w.a.token); err != nil {
		fmt.Fprintf(&b, "token check: %v\n", err)
	} else {
		fmt.Fprintf(&b, "token checks as %s\n", tk.Name)
	}
	held, err := w.alice.HeldTools(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range held {
		fmt.Fprintf(&b, "held %s/%s %s\n", h.ServerID, h.Tool, h.NewHash)
	}
	cards, err := w.alice.Cards(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cards {
		fmt.Fprintf(&b, "card %s %s %s\n", c.ID, c.Status, c.OperationID)
	}
	fmt.Fprintf(&b, "her server: %d executions, %d subscriptions, ask cancelled %d\n",
		w.aliceFx.TotalExecutions(), w.aliceFx.Subscriptions(), w.aliceFx.Cancelled("ask"))
	return b.String()
}

// routes tries every local-API route as Bob with Alice's ids.
func (w *world) routes(t *testing.T) {
	cases := routeCases()
	routes := daemon.APIRoutes()
	for _, r := range routes {
		if _, ok := cases[r]; !ok {
			t.Errorf("route %q has no isolation case: add one to routeCases (and to the list atop isolation_test.go)", r)
		}
	}
	for r := range cases {
		if !slices.Contains(routes, r) {
			t.Errorf("isolation case %q names no route of daemon.APIRoutes: remove or rename it", r)
		}
	}
	// Alice's own requests first: what Bob is refused, she is given.
	for _, route := range slices.Sorted(maps.Keys(cases)) {
		for _, p := range cases[route].probes(w, w.a) {
			if p.alice == 0 {
				continue
			}
			if got := socketDo(t, w.ctx, w.sock, aliceEmail, p); got.status != p.alice {
				t.Errorf("%s: Alice's own %s %s: %d, want %d: %s", route, p.method, p.path, got.status, p.alice, got.body)
			}
		}
	}
	before := w.aliceState(t)
	for _, route := range slices.Sorted(maps.Keys(cases)) {
		c := cases[route]
		t.Run(strings.NewReplacer(" ", "_", "/", "_").Replace(route), func(t *testing.T) {
			probes, ghosts := c.probes(w, w.a), c.probes(w, w.ghost)
			if fmt.Sprint(probes) == fmt.Sprint(ghosts) && c.shows == nil && c.why == "" {
				t.Errorf("the case names none of Alice's ids and shows nothing of Bob's: say why the route cannot leak (why)")
			}
			var shown strings.Builder
			for i, p := range probes {
				got := w.bobProbe(t, p)
				shown.WriteString(got.body)
				g := w.bobProbe(t, ghosts[i])
				if got.status != p.want || g.status != p.want {
					t.Errorf("%s %s: %d (the ghost's: %d), want %d: %s", p.method, p.path, got.status, g.status, p.want, got.body)
				}
				// An answer that differs from the ghost's tells Bob that
				// what he named exists. Successful answers carry times
				// and new tokens: their status is compared (above).
				if ug := w.unghost(g.body); got.status >= 300 && ug != got.body {
					t.Errorf("%s %s: the answer to Alice's ids differs from the answer to ids nobody has:\n alice's: %s\n ghost's: %s", p.method, p.path, got.body, ug)
				}
				if c.undo != nil {
					for _, u := range append(c.undo(w, w.a), c.undo(w, w.ghost)...) {
						if got := w.bobProbe(t, u); got.status != u.want {
							t.Fatalf("undo %s %s: %d %s", u.method, u.path, got.status, got.body)
						}
					}
				}
			}
			if c.shows != nil {
				for _, s := range c.shows(w) {
					if !strings.Contains(shown.String(), s) {
						t.Errorf("Bob's answers do not show his own %q: %s", s, shown.String())
					}
				}
			}
			if after := w.aliceState(t); after != before {
				t.Fatalf("Alice's state changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
	t.Run("events", w.events)
}

// bobProbe sends p as Bob and checks that neither the answer nor the log
// written meanwhile holds anything of Alice's he did not send.
func (w *world) bobProbe(t *testing.T, p probe) answer {
	t.Helper()
	off := w.logs.len()
	got := socketDo(t, w.ctx, w.sock, bobEmail, p)
	w.bobWindows = append(w.bobWindows, [2]int{off, w.logs.len()})
	hdr, _ := json.Marshal(got.header)
	if l := w.leaks(got.body+string(hdr), p.sent()); len(l) > 0 {
		t.Errorf("%s %s: the answer holds Alice's %q: %s", p.method, p.path, l, got.body)
	}
	if l := w.leaks(w.bobLog(t, off), p.sent()); len(l) > 0 {
		t.Errorf("%s %s: the log holds Alice's %q: %s", p.method, p.path, l, w.bobLog(t, off))
	}
	return got
}

// events: Alice's changes while Bob's event stream is open never reach
// it; Bob's own do.
func (w *world) events(t *testing.T) {
	ctx, cancel := context.WithCancel(w.ctx)
	defer cancel()
	resp := socketRequest(t, ctx, w.sock, bobEmail, probe{method: "GET", path: "/api/events"})
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	var seen strings.Builder
	// Alice changes a tool switch and back; then Bob changes his.
	if _, err := w.alice.SetTool(w.ctx, w.a.server, w.a.tool, false); err != nil {
		t.Fatal(err)
	}
	if _, err := w.alice.SetTool(w.ctx, w.a.server, w.a.tool, true); err != nil {
		t.Fatal(err)
	}
	if _, err := w.bob.SetTool(w.ctx, w.bobServer, "bob_own_tool", false); err != nil {
		t.Fatal(err)
	}
	defer w.bob.SetTool(w.ctx, w.bobServer, "bob_own_tool", true)
	for !strings.Contains(seen.String(), `"disabledTools":["bob_own_tool"]`) {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("Bob's event stream ended before his change: %v: %s", err, seen.String())
		}
		seen.WriteString(line)
	}
	if l := w.leaks(seen.String(), ""); len(l) > 0 {
		t.Errorf("Bob's event stream holds Alice's %q: %s", l, seen.String())
	}
}

// aliceUnharmed: after all of Bob's tries, Alice's own calls finish as
// she decides: her approval is hers to give, her card hers to answer.
func (w *world) aliceUnharmed(t *testing.T) {
	ctx := w.ctx
	w.release <- localapi.Decision{Approved: true}
	if err := w.alice.Answer(ctx, w.a.card, localapi.Answer{Action: "accept", Content: map[string]any{"name": "Alice"}}); err != nil {
		t.Fatalf("Alice answers her card: %v", err)
	}
	asked := testkit.Recv(t, "Alice's asking call", w.asking)
	if asked.err != nil || asked.res.Outcome != localapi.OutcomeOK || !strings.Contains(fmt.Sprint(asked.res.Content), "hello Alice (42)") {
		t.Errorf("Alice's asking call: %+v %v", asked.res, asked.err)
	}
	waited := testkit.Recv(t, "Alice's approved call", w.waiting)
	if waited.err != nil || waited.res.Outcome != localapi.OutcomeOK || !strings.Contains(fmt.Sprint(waited.res.Content), "approved by alice") {
		t.Errorf("Alice's approved call: %+v %v", waited.res, waited.err)
	}
	if n := w.aliceFx.Subscriptions(); n != 1 {
		t.Errorf("Alice's server has %d subscriptions, want hers alone", n)
	}
	if n := w.bobFx.TotalExecutions(); n == 0 {
		t.Error("Bob's own call with Alice's operation id never reached his server")
	}
}
