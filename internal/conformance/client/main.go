// Command client is remotemcp's client for the official MCP conformance
// suite (client mode). It is built on the real store, manager, agent
// bridge, elicitation cards and OAuth code — there is no test-only path —
// and follows the harness's rules: the server URL is the last argument,
// the scenario is in MCP_CONFORMANCE_SCENARIO and optional credentials in
// MCP_CONFORMANCE_CONTEXT. It plays the person (approving calls, answering
// forms with their defaults) and, for OAuth, the browser.
//
// Exit status 0 means the scenario's client side ran to the end; otherwise
// the error is printed on stderr.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/remotemcp/remotemcp/engine"
	"github.com/remotemcp/remotemcp/agent"
	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/elicit"
	"github.com/remotemcp/remotemcp/hostperm"
	"github.com/remotemcp/remotemcp/manager"
	"github.com/remotemcp/remotemcp/oauth"
	"github.com/remotemcp/remotemcp/session"
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

	c     *engine.Engine
	m     *manager.Manager
	reg   *agent.Registry
	cards *elicit.Cards
}

const serverID = "conformance"

func (h *harness) run(ctx context.Context, dir string) error {
	srv := config.Server{ID: serverID, Name: h.scenario, URL: h.url, Enabled: true, Auth: config.Auth{Kind: config.AuthNone}}
	auth := strings.HasPrefix(h.scenario, "auth/")
	if auth {
		srv.Auth = config.Auth{Kind: config.AuthOAuth, ClientID: h.sc.ClientID, ClientSecret: h.sc.ClientSecret}
	}
	if err := srv.Validate(); err != nil {
		return fmt.Errorf("server config: %w", err)
	}
	opts := engine.Options{DataDir: dir, Logger: h.log, NoStart: true, Cards: true,
		// The harness plays the person: every origin its scenario uses
		// (the MCP server, its authorization server) is approved when
		// first contacted, through the same guard as in the product.
		AskHost: func(context.Context, hostperm.PermissionRequiredError) bool { return true }}
	if draftOnly[h.scenario] || draftRevision(os.Getenv("MCP_CONFORMANCE_PROTOCOL_VERSION")) {
		opts.ProtocolVersion = session.ProtocolAuto
	}
	hooks, err := h.authHooks(auth, &opts)
	if err != nil {
		return err
	}
	c, err := engine.Open(ctx, opts)
	if err != nil {
		return err
	}
	defer c.Close()
	h.c, h.m = c, c.Manager
	if hooks != nil {
		if err := hooks(c); err != nil {
			return err
		}
	}
	if err := c.Store.AddServer(ctx, srv); err != nil {
		return fmt.Errorf("add server: %w", err)
	}

	cards := c.Elicit
	h.cards = cards
	// The person: answer every form with its defaults (SEP-1034).
	go h.answerCards(ctx)

	if err := c.Manager.Start(ctx); err != nil {
		return err
	}
	reg, err := agent.New(agent.Options{
		Backend:  c.Manager,
		Cards:    cards,
		Approver: agent.ApproverFunc(func(context.Context, agent.ApprovalRequest) (agent.Decision, error) { return agent.Allow(), nil }),
		Logger:   h.log,
	})
	if err != nil {
		return err
	}
	defer reg.Close()
	h.reg = reg
	if err := c.Manager.Connect(ctx, serverID); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	if err := reg.Start(ctx); err != nil {
		return fmt.Errorf("list capabilities: %w", err)
	}
	return h.scenarioSteps(ctx)
}

func (h *harness) answerCards(ctx context.Context) {
	ch := h.cards.Subscribe(ctx)
	for card := range ch {
		if card.Status != elicit.StatusPending {
			continue
		}
		if err := h.cards.Answer(ctx, card.ID, elicit.Response{Action: "accept", Content: map[string]any{}}); err != nil {
			h.log.Warn("answer elicitation", "card", card.ID, "err", err)
		}
	}
}

func (h *harness) tool(name string) (agent.AgentTool, bool) {
	return h.reg.Snapshot().ToolFor(serverID, name)
}

func (h *harness) call(ctx context.Context, tool string, args json.RawMessage) (*agent.ToolResult, error) {
	t, ok := h.tool(tool)
	if !ok {
		return nil, fmt.Errorf("server does not list tool %q", tool)
	}
	res, err := h.reg.Call(ctx, t.Name, args, agent.CallOptions{})
	if err != nil {
		return nil, err
	}
	if res.Outcome != agent.OutcomeOK {
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
// harness plays the person who configured it.
const cimdURL = "https://conformance-test.local/client-metadata.json"

// authHooks makes the manager's OAuth handlers interactive for auth
// scenarios: the harness's authorization server answers the authorization
// request with an immediate redirect, so a headless GET that reads the
// Location header plays the person and the browser. The authenticator is
// the product's own, over the engine's store, memory and guarded HTTP
// client, configured with the suite's CIMD URL; it is used only where the
// authorization server accepts CIMD, and DCR or the scenario's
// pre-registered client otherwise, as in the product.
func (h *harness) authHooks(auth bool, opts *engine.Options) (func(*engine.Engine) error, error) {
	if !auth {
		return nil, nil
	}
	var authn *oauth.Authenticator
	opts.OAuth = providerFunc(func(srv config.Server) manager.OAuthProvider {
		return engine.OAuthProvider(authn, oauth.HeadlessBrowser(nil))
	})
	return func(c *engine.Engine) error {
		authn = oauth.New(oauth.Options{Store: c.Store, Memory: c.Memory, HTTPClient: c.HTTP, Logger: h.log,
			ClientMetadataURL: func(config.Server) string { return cimdURL }})
		return nil
	}, nil
}

// providerFunc defers building the provider until the Client (and its
// Authenticator) exists.
type providerFunc func(config.Server) manager.OAuthProvider

func (f providerFunc) Handler(srv config.Server) auth.OAuthHandler { return f(srv).Handler(srv) }

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
		focal, ok := h.tool("json_schema_2020_12_tool")
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
	snap := h.reg.Snapshot()
	tools := snap.Tools()
	for _, t := range tools {
		if _, err := h.call(ctx, t.ToolName, json.RawMessage(`{}`)); err != nil {
			return err
		}
		if strings.HasPrefix(h.scenario, "auth/") {
			break // the auth scenarios' servers expose one test tool
		}
	}
	if strings.HasPrefix(h.scenario, "auth/") {
		return nil
	}
	if rs := h.reg.SearchResources("", 1); len(rs) > 0 {
		if _, err := h.reg.Read(ctx, rs[0].Mention()); err != nil {
			h.log.Warn("read resource", "err", err)
		}
	}
	for _, p := range snap.Prompts() {
		args := map[string]string{}
		for _, a := range p.Arguments {
			args[a.Name] = "x"
		}
		if _, err := h.reg.GetPrompt(ctx, p.Command, args); err != nil {
			h.log.Warn("get prompt", "err", err)
		}
		break
	}
	return nil
}
