package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/agent"
	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/store"
)

// callFlags are the flags of commands that call a tool.
type callFlags struct {
	yes     bool
	timeout time.Duration
	asJSON  bool
}

func (f *callFlags) register(cmd *cobra.Command, yesHelp string) {
	cmd.Flags().BoolVarP(&f.yes, "yes", "y", false, yesHelp)
	cmd.Flags().DurationVar(&f.timeout, "timeout", 0, "time limit of the call, replacing the server's toolTimeout (default 60s), e.g. 5m")
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print the whole result as JSON, content blocks with their provenance")
}

func (f *callFlags) check() error {
	if f.timeout < 0 {
		return usageErrorf("--timeout must be positive, e.g. --timeout 30s")
	}
	return nil
}

func newCallCmd(a *app) *cobra.Command {
	var f callFlags
	cmd := &cobra.Command{
		Use:   "call NAME [ARGS_JSON|-]",
		Short: "Call a tool once, after your approval",
		Long: `Call a tool and print its result. NAME is the tool's agent name
mcp__SERVER__TOOL (see "remotemcp tools"), or SERVER/TOOL; ARGS_JSON is a
JSON object (default {}), or "-" to read it from stdin.

Every call needs approval: on a terminal you are shown the server, the
tool, the arguments and the server's annotations and asked; the
annotations (readOnlyHint …) never skip the question. Without a terminal
the call is refused unless --yes approves it.

If the server asks a question during the call (elicitation), it is asked
at the terminal; without one, the call waits until someone answers it with
"remotemcp elicitations answer" from another shell.

The text of the result is printed; --json prints the whole result with
its content blocks and their provenance. Progress and notes go to stderr.
The exit status is 0 whenever the server answered, also when the tool
reported an error (isError); it is non-zero when no answer came (refused,
denied, timed out, failed). Ctrl-C cancels the call: the server is told to
stop, but the call may or may not have run. A call is never re-sent.`,
		Example: `  remotemcp call mcp__docs__search '{"query": "oauth"}'
  remotemcp call docs/search '{"query": "oauth"}' --yes --json
  echo '{"ms": 5000}' | remotemcp call mcp__fx__slow - --yes --timeout 10s`,
		Args: argsRange(1, 2, "NAME [ARGS_JSON|-]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.check(); err != nil {
				return err
			}
			ctx := cmd.Context()
			raw, fromStdin := "{}", false
			if len(args) == 2 {
				raw = args[1]
			}
			if raw == "-" {
				b, err := io.ReadAll(io.LimitReader(a.streams.In, agent.MaxArgumentsSize+1))
				if err != nil {
					return fmt.Errorf("read the arguments from stdin: %w", err)
				}
				raw, fromStdin = string(b), true
			}
			callArgs, err := parseArgs(raw)
			if err != nil {
				return err
			}
			if dc, err := a.daemonClient(ctx); err != nil {
				return err
			} else if dc != nil {
				if fromStdin && !f.yes {
					return fmt.Errorf("refused: the call of %s was not sent: every remote tool call needs approval, and stdin carried the arguments; add --yes to approve this call", args[0])
				}
				return a.callViaDaemon(ctx, dc, args[0], callArgs, f)
			}

			c, err := a.open(ctx)
			if err != nil {
				return err
			}
			ct, err := resolveCall(ctx, c.Store, args[0])
			if err != nil {
				c.Close()
				return err
			}
			// Refuse before connecting when nobody can approve.
			if !f.yes && (!a.interactive() || fromStdin) {
				c.Close()
				why := errNoTerminal
				if fromStdin {
					why = errors.New("every remote tool call needs approval, and stdin carried the arguments; add --yes to approve this call")
				}
				return fmt.Errorf("refused: the call of %s was not sent: %w", args[0], why)
			}
			b, err := a.startBridge(ctx, c, ct.servers, bridgeOptions{
				toolTimeout: f.timeout, approver: cliApprover{a: a, yes: f.yes}, cards: true,
			})
			if err != nil {
				return err
			}
			defer b.Close()
			t, err := b.findTool(ct)
			if err != nil {
				return err
			}
			res, err := b.reg.Call(ctx, t.Name, callArgs, agent.CallOptions{
				Progress: func(p agent.Progress) { a.printProgress(t.Name, p) },
				Timeout:  f.timeout,
			})
			return b.finishCall(ctx, res, err, f)
		},
	}
	f.register(cmd, "approve the call without asking (needed without a terminal)")
	return cmd
}

// parseArgs checks that raw is one JSON object.
func parseArgs(raw string) (json.RawMessage, error) {
	t := bytes.TrimSpace([]byte(raw))
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(t))
	if err := dec.Decode(&obj); err != nil || obj == nil || dec.More() {
		why := "not a JSON object"
		if err != nil {
			why = err.Error()
		}
		return nil, usageErrorf(`ARGS_JSON must be one JSON object such as '{"text": "hi"}' (%s)`, why)
	}
	return json.RawMessage(t), nil
}

// callTarget is a resolved NAME: the servers it may belong to and how to
// find the tool in the registry.
type callTarget struct {
	name    string
	servers []config.Server // enabled candidates
	// agentName is NAME in the mcp__SERVER__TOOL form; server and tool
	// are the SERVER/TOOL form, or the split of agentName when only one
	// server fits.
	agentName    string
	server, tool string
}

// resolveCall reads NAME against the configured servers. Server ids may
// contain "__", so mcp__SERVER__TOOL may fit several; the registry's
// unique names then decide. A disabled server or tool is refused before
// anything connects.
func resolveCall(ctx context.Context, st *store.SQLite, name string) (callTarget, error) {
	ct := callTarget{name: name}
	if s, t, ok := strings.Cut(name, "/"); ok && !strings.HasPrefix(name, "mcp__") {
		if s == "" || t == "" {
			return ct, usageErrorf("NAME %q must be mcp__SERVER__TOOL or SERVER/TOOL", name)
		}
		srv, err := enabledServer(ctx, st, s)
		if err != nil {
			return ct, err
		}
		ct.servers, ct.server, ct.tool = []config.Server{srv}, s, t
	} else {
		rest, ok := strings.CutPrefix(name, "mcp__")
		if !ok {
			return ct, usageErrorf("NAME %q must be mcp__SERVER__TOOL or SERVER/TOOL (see \"remotemcp tools\")", name)
		}
		all, err := st.ListServers(ctx)
		if err != nil && !errors.Is(err, store.ErrSealOpen) {
			return ct, fmt.Errorf("list servers: %w", err)
		}
		var disabled []string
		for _, s := range all {
			t, ok := strings.CutPrefix(rest, s.ID+"__")
			if !ok || t == "" {
				continue
			}
			if !s.Enabled {
				disabled = append(disabled, s.ID)
				continue
			}
			ct.servers = append(ct.servers, s)
			ct.server, ct.tool = s.ID, t
		}
		switch {
		case len(ct.servers) == 0 && len(disabled) > 0:
			return ct, errDisabled(disabled[0])
		case len(ct.servers) == 0:
			guess, _, _ := strings.Cut(rest, "__")
			return ct, errNoServer(guess)
		case len(ct.servers) > 1:
			ct.server, ct.tool = "", ""
		}
		ct.agentName = name
	}
	if len(ct.servers) == 1 && ct.servers[0].ToolDisabled(ct.tool) {
		id := ct.server
		return ct, fmt.Errorf("tool %q of server %s is switched off; switch it on with \"remotemcp servers set %s --enable-tool %s\"", ct.tool, id, id, ct.tool)
	}
	return ct, nil
}

// findTool looks the resolved NAME up in the registry, or explains why it
// is not there: the server could not be listed, or has no such tool.
func (b *bridge) findTool(ct callTarget) (agent.AgentTool, error) {
	snap := b.reg.Snapshot()
	if ct.agentName != "" {
		if t, ok := snap.Tool(ct.agentName); ok {
			return t, nil
		}
	}
	if ct.server != "" {
		if t, ok := snap.ToolFor(ct.server, ct.tool); ok {
			return t, nil
		}
	}
	if b.reportFailures(nil) {
		return agent.AgentTool{}, reported
	}
	var names []string
	for _, t := range snap.Tools() {
		names = append(names, t.Name)
	}
	have := "no tools"
	if len(names) > 0 {
		have = "these tools: " + cell(strings.Join(names, ", "))
	}
	if ct.server != "" {
		return agent.AgentTool{}, fmt.Errorf("server %s has no tool %q (it has %s); see \"remotemcp tools --server %s\"", ct.server, ct.tool, have, ct.server)
	}
	return agent.AgentTool{}, fmt.Errorf("no tool is named %q (the servers it could belong to have %s); see \"remotemcp tools\"", ct.name, have)
}

// printProgress shows a progress notification of a call on stderr.
func (a *app) printProgress(tool string, p agent.Progress) {
	s := fmt.Sprintf("%s: progress %g", cell(tool), p.Progress)
	if p.Total > 0 {
		s += fmt.Sprintf("/%g", p.Total)
	}
	if p.Message != "" {
		s += " " + cell(p.Message)
	}
	fmt.Fprintln(a.streams.Err, s)
}
