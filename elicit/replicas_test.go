package elicit

import (
	"context"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/internal/pgtest"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/store"
)

// openReplicaUser opens the gateway database at dsn as one replica (its
// own OpenPostgres, the change feed's poll an hour away) and returns the
// store of user id in it.
func openReplicaUser(t *testing.T, dsn, keyDir, id string) *store.DB {
	t.Helper()
	ctx := context.Background()
	p, err := store.OpenPostgres(ctx, dsn, store.PostgresOptions{KeyDir: keyDir, Options: store.Options{PollInterval: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	st, err := p.User(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// A question card asked by a call on one replica and answered on another
// replica's page reaches the waiting call (issue #23: "answered on any
// replica's page reaches the call waiting on another within 1 s
// (NOTIFY)"). The poll is an hour away: only the notification of the
// answer record's write wakes the owner.
func TestCardAnsweredOnAnotherReplica(t *testing.T) {
	dsn, keyDir := pgtest.DSN(t), t.TempDir()
	admin, err := store.OpenPostgres(context.Background(), dsn, store.PostgresOptions{KeyDir: keyDir})
	if err != nil {
		t.Fatal(err)
	}
	u, err := admin.AddUser(context.Background(), "ada@example.com")
	admin.Close()
	if err != nil {
		t.Fatal(err)
	}
	stA := openReplicaUser(t, dsn, keyDir, u.ID)
	stB := openReplicaUser(t, dsn, keyDir, u.ID)
	a := openCards(t, stA, Options{})
	b := openCards(t, stB, Options{})

	card, adm, ch := ask(t, a, "s", "o1")
	start := time.Now()
	if err := b.Submit(testkit.Context(t), card.ID, Response{Action: ActionAccept, Content: map[string]any{"name": "Ada"}}); err != nil {
		t.Fatal(err)
	}
	h := recvH(t, ch)
	t.Logf("answer on replica B → the call waiting on replica A: %v", time.Since(start))
	if h.err != nil || h.res.Action != "accept" || h.res.Content["name"] != "Ada" {
		t.Fatalf("A's handler = %+v, %v", h.res, h.err)
	}
	adm.Finish()
	if got := stored(t, stB, card.ID); got.Status != StatusAccepted || got.Owner != card.Owner {
		t.Fatalf("card after the call = %+v", got)
	}
	noAnswerRecords(t, stB)
}
