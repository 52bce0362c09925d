// Command client is remotemcp's client for the official MCP conformance
// suite (client mode). It uses only the public API (remotemcp.Open and
// the localapi types), so the suite tests the path every user takes —
// there is no test-only wiring — and follows the harness's rules: the
// server URL is the last argument, the scenario is in
// MCP_CONFORMANCE_SCENARIO and optional credentials in
// MCP_CONFORMANCE_CONTEXT. It plays the person (adding the server,
// approving calls, answering forms with their defaults, signing in when
// the server asks) and, for OAuth, the browser: it fetches the
// authorization URL the engine's sign-in returns and follows the redirect
// back to the engine's loopback listener.
//
// Exit status 0 means the scenario's client side ran to the end; otherwise
// the error is printed on stderr.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/remotemcp/remotemcp"
	"github.com/remotemcp/remotemcp/localapi"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "remotemcp conformance client:", err)
		os.Exit(1)
	}
}

// scenarioContext is MCP_CONFORMANCE_CONTEXT.
type scenarioContext struct {
	Name         string `json:"name"`
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
	ToolCalls    []struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"toolCalls"`
}

// draftOnly are the scenarios introduced in the 2026-07-28 draft; they let
// go-sdk negotiate (it implements the draft and probes it first). Everything else runs with
// remotemcp's pinned revision (2025-11-25).
var draftOnly = map[string]bool{
	"request-metadata":              true,
	"sep-2322-client-request-state": true,
	"http-standard-headers":         true,
	"http-custom-headers":           true,
	"http-invalid-tool-headers":     true,
	"json-schema-ref-no-deref":      true,
}

// draftRevision reports whether the harness asks for a revision newer than
// the ones remotemcp pins (2025-11-25, 2025-06-18).
func draftRevision(v string) bool {
	return v != "" && v != "2025-11-25" && v != "2025-06-18"
}

func run() error {
	if len(os.Args) < 2 {
		return errors.New("usage: client [flags...] SERVER_URL (the conformance harness appends the URL)")
	}
	url := os.Args[len(os.Args)-1]
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	var sc scenarioContext
	if raw := os.Getenv("MCP_CONFORMANCE_CONTEXT"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &sc); err != nil {
			return fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()

	level := slog.LevelWarn
	if os.Getenv("REMOTEMCP_CONFORMANCE_DEBUG") != "" {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	dir, err := os.MkdirTemp("", "remotemcp-conformance-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	h := &harness{scenario: scenario, sc: sc, url: url, log: log}
	return h.run(ctx, dir)
}

type harness struct {
	scenario string
	sc       scenarioContext
	url      string
	log      *slog.Logger
	auth     bool // an auth/ scenario: the server signs in with OAuth

	c *remotemcp.Client
	// answers are the goroutines answering server questions; run waits
	// for them before it closes the engine.
	answers sync.WaitGroup
}

const serverID = "conformance"

// protocolAuto, as Options.ProtocolVersion, lets go-sdk negotiate (the
// draft scenarios).
const protocolAuto = "auto"

func (h *harness) run(ctx context.Context, dir string) error {
	h.auth = strings.HasPrefix(h.scenario, "auth/")
	opts := remotemcp.Options{DataDir: dir, Logger: h.log, NoStartupConnect: true,
		// The harness plays the person: every origin its scenario uses
		// (the MCP server, its authorization server) is approved when
		// first contacted, through the same guard as in the product.
		AskHost: func(context.Context, localapi.PermissionInfo) bool { return true }}
	if h.auth {
		// The person is at hand: a server that asks for a sign-in gets
		// one inside the request that met it, and the harness plays the
		// browser on the authorization URL.
		opts.SignIn = func(ctx context.Context, _, authURL string) error { return browse(ctx, authURL) }
	}
	if draftOnly[h.scenario] || draftRevision(os.Getenv("MCP_CONFORMANCE_PROTOCOL_VERSION")) {
		opts.ProtocolVersion = protocolAuto
	}
	c, err := remotemcp.Open(ctx, opts)
	if err != nil {
		return err
	}
	defer c.Close()
	defer h.answers.Wait() // before Close: an answer in flight finishes
	h.c = c

	no := false
	req := localapi.AddServerRequest{ID: serverID, Name: h.scenario, URL: h.url, Auth: "none", ConnectOnStartup: &no}
	if h.auth {
		port, release, err := reservePort()
		if err != nil {
			return err
		}
		defer release()
		// The person configured the suite's credentials, its CIMD URL
		// and a redirect port of their own (the suite runs scenarios
		// side by side; a fixed port would collide).
		req.Auth, req.ClientID, req.ClientSecret = "oauth", h.sc.ClientID, h.sc.ClientSecret
		req.ClientMetadataURL, req.RedirectPort = cimdURL, port
	}
	if _, err := c.AddServer(ctx, req); err != nil {
		return fmt.Errorf("add server: %w", err)
	}
	if _, err := c.Connect(ctx, serverID); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	return h.scenarioSteps(ctx)
}

// noRedirect is the browser's HTTP client: it shows each redirect
// instead of following it, so browse can check where it leads.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// browse plays the person's browser: the suite's authorization server
// approves at once and redirects back, and the redirect goes to the
// engine's loopback listener, which completes the sign-in.
func browse(ctx context.Context, authURL string) error {
	au, err := url.Parse(authURL)
	if err != nil {
		return fmt.Errorf("authorization URL: %w", err)
	}
	loc, err := get(ctx, authURL, true)
	if err != nil {
		return fmt.Errorf("authorization request: %w", err)
	}
	back, err := au.Parse(loc)
	if err != nil {
		return fmt.Errorf("authorization redirect %q: %w", loc, err)
	}
	if want := au.Query().Get("redirect_uri"); !strings.HasPrefix(back.String(), want) {
		return fmt.Errorf("the authorization endpoint redirected elsewhere than the redirect URI %s", want)
	}
	_, err = get(ctx, back.String(), false)
	return err
}

// get GETs u and returns the Location of its redirect (redirect true) or
// checks that it answered 200.
func get(ctx context.Context, u string, redirect bool) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		return "", err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch {
	case redirect && (resp.StatusCode < 300 || resp.StatusCode > 399):
		return "", fmt.Errorf("answered %d instead of redirecting back", resp.StatusCode)
	case !redirect && resp.StatusCode != http.StatusOK:
		return "", fmt.Errorf("the callback was answered %d", resp.StatusCode)
	}
	return resp.Header.Get("Location"), nil
}

// answer answers a server question with its form's defaults (SEP-1034),
// as the person would accept it.
func (h *harness) answer(card localapi.Card) {
	if card.Status != localapi.CardPending {
		return
	}
	h.answers.Add(1)
	go func() {
		defer h.answers.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.c.Answer(ctx, card.ID, localapi.Answer{Action: "accept", Content: map[string]any{}}); err != nil {
			h.log.Warn("answer elicitation", "card", card.ID, "err", err)
		}
	}()
}

// tools lists the server's tools (its catalog, from the connect).
func (h *harness) tools(ctx context.Context) ([]localapi.Tool, error) {
	l, err := h.c.Tools(ctx, localapi.ToolsRequest{ServerID: serverID})
	if err != nil {
		return nil, err
	}
	return l.Tools, nil
}

func (h *harness) tool(ctx context.Context, name string) (localapi.Tool, bool) {
	l, err := h.tools(ctx)
	if err != nil {
		return localapi.Tool{}, false
	}
	for _, t := range l {
		if t.ServerID == serverID && t.ToolName == name {
			return t, true
		}
	}
	return localapi.Tool{}, false
}

func (h *harness) call(ctx context.Context, tool string, args json.RawMessage) (*localapi.ToolResult, error) {
	t, ok := h.tool(ctx, tool)
	if !ok {
		return nil, fmt.Errorf("server does not list tool %q", tool)
	}
	res, err := h.c.Call(ctx, localapi.CallRequest{Tool: t.Name, Arguments: args, Approved: true},
		localapi.CallHandler{Question: h.answer})
	if err != nil {
		return nil, err
	}
	if res.Outcome != "ok" {
		return res, fmt.Errorf("call %s: %s: %s", tool, res.Outcome, res.Message)
	}
	return res, nil
}

// cimdURL is the client ID metadata document URL the suite's auth
// scenarios expect: auth/basic-cimd checks that the authorization
// request's client_id is exactly this URL when its authorization server
// advertises client_id_metadata_document_supported, and that server
// accepts it without fetching it (the suite's CIMD_CLIENT_METADATA_URL).
// The product takes the URL from the server's config (SPEC §9 A3); the
// harness plays the person who configured it. It is used only where the
// authorization server accepts CIMD, and DCR or the scenario's
// pre-registered client otherwise, as in the product.
const cimdURL = "https://conformance-test.local/client-metadata.json"

func (h *harness) scenarioSteps(ctx context.Context) error {
	switch h.scenario {
	case "initialize":
		return nil
	case "tools_call":
		_, err := h.call(ctx, "add_numbers", json.RawMessage(`{"a":2,"b":3}`))
		return err
	case "elicitation-sep1034-client-defaults":
		_, err := h.call(ctx, "test_client_elicitation_defaults", json.RawMessage(`{}`))
		return err
	case "sse-retry":
		_, err := h.call(ctx, "test_reconnection", json.RawMessage(`{}`))
		return err
	case "json-schema-2020-12-preservation":
		focal, ok := h.tool(ctx, "json_schema_2020_12_tool")
		if !ok {
			return errors.New("json_schema_2020_12_tool not listed")
		}
		args, _ := json.Marshal(map[string]json.RawMessage{"schema": focal.InputSchema})
		_, err := h.call(ctx, "json_schema_echo", args)
		return err
	case "json-schema-ref-no-deref":
		return nil // listing is the whole test: nothing may fetch the $ref
	}
	if len(h.sc.ToolCalls) > 0 {
		for _, tc := range h.sc.ToolCalls {
			args := tc.Arguments
			if len(args) == 0 {
				args = json.RawMessage(`{}`)
			}
			if _, err := h.call(ctx, tc.Name, args); err != nil {
				return err
			}
		}
		return nil
	}
	return h.generic(ctx)
}

// generic exercises every category: call each tool once, read the first
// resource, get the first prompt. It is what an auth scenario or an
// unknown one gets.
func (h *harness) generic(ctx context.Context) error {
	tools, err := h.tools(ctx)
	if err != nil {
		return err
	}
	for _, t := range tools {
		if _, err := h.call(ctx, t.ToolName, json.RawMessage(`{}`)); err != nil {
			return err
		}
		if h.auth {
			break // the auth scenarios' servers expose one test tool
		}
	}
	if h.auth {
		return nil
	}
	if rs, err := h.c.Resources(ctx, localapi.ResourcesRequest{ServerID: serverID, Limit: 1}); err == nil && len(rs) > 0 {
		if _, err := h.c.ReadResource(ctx, localapi.ReadRequest{Mention: "@" + rs[0].ServerID + ":" + rs[0].URI}); err != nil {
			h.log.Warn("read resource", "err", err)
		}
	}
	prompts, err := h.c.Prompts(ctx, serverID)
	if err == nil && len(prompts) > 0 {
		p := prompts[0]
		args := map[string]string{}
		for _, a := range p.Arguments {
			args[a.Name] = "x"
		}
		if _, err := h.c.GetPrompt(ctx, localapi.GetPromptRequest{Command: p.Command, Arguments: args}); err != nil {
			h.log.Warn("get prompt", "err", err)
		}
	}
	return nil
}
