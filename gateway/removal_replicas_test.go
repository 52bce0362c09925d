package gateway_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/remotemcp/remotemcp/gateway"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/localapi"
)

// A person removed through one replica is gone on the others too (issue
// #23, SPEC §9 A11): the other replica's change feed finds the user gone
// and its gateway closes her engine at once, instead of serving her open
// engine to her page and hosts until it restarts.
func TestRemovedOnAnotherReplica(t *testing.T) {
	w := newReplicaWorld(t)
	w.addPerson(t, "alice@example.com")
	w.addPerson(t, "bob@example.com")
	id := w.userID(t, "alice@example.com")
	eng := w.engine(t, 1, "alice@example.com") // open on B
	w.engine(t, 1, "bob@example.com")
	if err := w.r[0].gw.RemoveUser(w.ctx, "alice@example.com"); err != nil {
		t.Fatal(err)
	}
	// Closed, not only forgotten: userGone drops it from the map first.
	testkit.WaitFor(t, "replica B closes the removed person's engine", func() bool {
		_, err := eng.Servers(w.ctx)
		return err != nil
	})
	if open := w.r[1].gw.OpenUsers(); slices.Contains(open, id) || len(open) != 1 {
		t.Errorf("replica B's open engines after the removal: %v (want Bob's alone)", open)
	}
	_, _, err := w.r[1].gw.Engine(w.ctx, "alice@example.com")
	var le *localapi.Error
	if !errors.As(err, &le) || le.Code != localapi.CodeNotFound {
		t.Errorf("replica B still finds the removed person: %v", err)
	}
	if _, _, err := w.r[1].gw.EngineByID(w.ctx, id); !errors.Is(err, gateway.ErrNoUser) {
		t.Errorf("replica B still opens her engine by id: %v", err)
	}
	if _, err := w.engine(t, 1, "bob@example.com").Servers(w.ctx); err != nil {
		t.Errorf("Bob's engine on replica B: %v", err)
	}
}
