package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/remotemcp/remotemcp"
	"github.com/remotemcp/remotemcp/agent"
	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/elicit"
	"github.com/remotemcp/remotemcp/store"
)

// bridge is what a command that uses servers' capabilities runs on: the
// opened data directory, a manager over the servers in scope, the agent
// registry over that manager and, for commands that call tools, the
// elicitation cards wired into both.
type bridge struct {
	a       *app
	c       *remotemcp.Client
	l       *live
	reg     *agent.Registry
	targets []config.Server

	cards *elicit.Cards // nil unless bridgeOptions.cards
	kv    *cardsKV
	stop  context.CancelFunc // stops the relay
	wg    sync.WaitGroup
	forms sync.WaitGroup // inline answers at the terminal
}

// formGrace is how long Close waits for an inline form to notice the
// command ended; a form blocked reading the terminal is left behind.
const formGrace = 200 * time.Millisecond

// bridgeOptions configure startBridge.
type bridgeOptions struct {
	// toolTimeout, when positive, replaces the servers' toolTimeout.
	toolTimeout time.Duration
	// approver decides tool calls; nil refuses them (commands that call
	// no tools).
	approver agent.Approver
	// cards wires elicitation: server questions become cards, answered at
	// the terminal or by `remotemcp elicitations answer`.
	cards bool
}

// noCalls is the approver of commands that call no tools.
var noCalls = agent.ApproverFunc(func(context.Context, agent.ApprovalRequest) (agent.Decision, error) {
	return agent.Decision{}, errors.New("this command calls no tools")
})

// startBridge connects the targets and lists their capabilities. It takes
// ownership of c: on success b.Close closes it, on failure it is closed
// already.
func (a *app) startBridge(ctx context.Context, c *remotemcp.Client, targets []config.Server, o bridgeOptions) (b *bridge, err error) {
	b = &bridge{a: a, c: c, targets: targets}
	defer func() {
		if err != nil {
			b.Close()
		}
	}()
	ids := make([]string, len(targets))
	for i, s := range targets {
		ids[i] = s.ID
	}
	mo := managerOptions{toolTimeout: o.toolTimeout}
	if o.cards {
		b.kv = newCardsKV(c.Store)
		if b.cards, err = b.kv.open(ctx, elicit.Options{Logger: a.log}); err != nil {
			return b, fmt.Errorf("open the elicitation cards: %w", err)
		}
		mo.elicit = b.cards.Handle
	}
	if b.l, err = a.startManagerWith(ctx, c, ids, mo); err != nil {
		return b, err
	}
	if b.cards != nil {
		b.cards.Watch(b.l.m)
	}
	approver := o.approver
	if approver == nil {
		approver = noCalls
	}
	b.reg, err = agent.New(agent.Options{Backend: b.l.m, Approver: approver, Cards: b.cards, Logger: a.log})
	if err != nil {
		return b, fmt.Errorf("start the tool registry: %w", err)
	}
	switch len(targets) {
	case 0:
		fmt.Fprintln(a.streams.Err, "no enabled servers; add one with \"remotemcp servers add ID URL\"")
	case 1:
		fmt.Fprintf(a.streams.Err, "connecting to %s (%s)…\n", targets[0].ID, cell(targets[0].URL))
	default:
		fmt.Fprintf(a.streams.Err, "connecting to %s…\n", plural(len(targets), "server", "servers"))
	}
	if err := b.reg.Start(ctx); err != nil {
		return b, err
	}
	if b.cards != nil {
		rctx, cancel := context.WithCancel(ctx)
		b.stop = cancel
		b.wg.Go(func() { b.relay(rctx) })
	}
	return b, nil
}

// Close shuts down in the order elicit documents: the command's calls
// have returned by now; open questions are closed as interrupted while
// their connections can still carry the refusal; then the sessions, the
// owner locks and the store.
func (b *bridge) Close() {
	if b.stop != nil {
		b.stop()
	}
	b.wg.Wait()
	formsDone := make(chan struct{})
	go func() {
		b.forms.Wait()
		close(formsDone)
	}()
	select {
	case <-formsDone:
	case <-time.After(formGrace):
	}
	if b.reg != nil {
		b.reg.Close()
	}
	if b.cards != nil {
		b.cards.Close()
	}
	if b.l != nil {
		b.l.m.Close()
	}
	if b.kv != nil {
		b.kv.release()
	}
	b.c.Close()
}

// server returns the target with this id.
func (b *bridge) server(id string) (config.Server, bool) {
	i := slices.IndexFunc(b.targets, func(s config.Server) bool { return s.ID == id })
	if i < 0 {
		return config.Server{}, false
	}
	return b.targets[i], true
}

// reportFailures prints, for every target in ids (nil: all) that could
// not be listed, the attributed failure and what to do. It reports
// whether any failed.
func (b *bridge) reportFailures(ids []string) bool {
	errs := b.reg.Snapshot().Errors()
	failed := false
	for _, s := range b.targets {
		err := errs[s.ID]
		if err == nil || ids != nil && !slices.Contains(ids, s.ID) {
			continue
		}
		failed = true
		if len(b.targets) > 1 {
			fmt.Fprintf(b.a.streams.Err, "%s: ", s.ID)
		}
		reportFailure(b.a.streams.Err, s, reasonOf(b.l.m, s.ID, err), err)
	}
	return failed
}

// bridgeFor opens the data directory and starts a bridge over every
// enabled server, or serverID alone (the listing commands' common start).
func (a *app) bridgeFor(ctx context.Context, serverID string, o bridgeOptions) (*bridge, error) {
	c, err := a.open(ctx)
	if err != nil {
		return nil, err
	}
	targets, err := a.targets(ctx, c, serverID)
	if err != nil {
		c.Close()
		return nil, err
	}
	return a.startBridge(ctx, c, targets, o)
}

// targets returns the servers a listing command works with: every enabled
// server, or the one named by --server.
func (a *app) targets(ctx context.Context, c *remotemcp.Client, serverID string) ([]config.Server, error) {
	if serverID != "" {
		srv, err := enabledServer(ctx, c.Store, serverID)
		if err != nil {
			return nil, err
		}
		return []config.Server{srv}, nil
	}
	all, err := c.Store.ListServers(ctx)
	if err != nil && !errors.Is(err, store.ErrSealOpen) {
		return nil, fmt.Errorf("list servers: %w", err)
	}
	var out []config.Server
	for _, s := range all {
		if s.Enabled {
			out = append(out, s)
		}
	}
	return out, nil
}

// enabledServer reads a server that must exist and be switched on.
func enabledServer(ctx context.Context, st *store.SQLite, id string) (config.Server, error) {
	srv, err := getServer(ctx, st, id)
	if err == nil && !srv.Enabled {
		err = errDisabled(id)
	}
	return srv, err
}

// errDisabled says a server is switched off.
func errDisabled(id string) error {
	return fmt.Errorf("server %s is disabled; enable it with \"remotemcp servers enable %s\"", id, id)
}

// targetsOf is the scope of a command about one server.
func targetsOf(srv config.Server) []config.Server { return []config.Server{srv} }
