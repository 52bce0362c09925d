package store

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"
)

// TestPostgresAuthFlows: a sign-in shared by a gateway's replicas is found
// by its state's hash, by its user only; its callback is taken once; how
// it ended reaches another process's subscriber; a record moved to
// another user does not open; an expired one is no one's and is purged;
// a removed server takes its flows along; a personal store has none.
func TestPostgresAuthFlows(t *testing.T) {
	ctx := context.Background()
	dsn, keyDir := pgDSN(t), t.TempDir()
	p := openPostgresT(t, dsn, keyDir)
	ua, ub := addUserT(t, p, "a@example.com"), addUserT(t, p, "b@example.com")
	a, b := userT(t, p, ua.ID), userT(t, p, ub.ID)
	for _, s := range []*DB{a, b} {
		if err := s.AddServer(ctx, noneServer("x", "https://x.example.com/mcp")); err != nil {
			t.Fatal(err)
		}
	}
	soon := time.Now().Add(10 * time.Minute)
	record := []byte(`{"verifier":"secret-verifier"}`)
	if err := a.PutAuthFlow(ctx, "state-1", "x", record, soon); err != nil {
		t.Fatal(err)
	}
	var sealed []byte
	if err := p.DB().QueryRow(`SELECT sealed FROM oauth_flows WHERE state_hash = $1`, AuthStateHash("state-1")).Scan(&sealed); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("secret-verifier")) {
		t.Fatal("the record is stored in the clear")
	}
	if id, err := p.AuthFlowUser(ctx, "state-1"); err != nil || id != ua.ID {
		t.Fatalf("AuthFlowUser = %q, %v; want A", id, err)
	}
	if _, err := p.AuthFlowUser(ctx, "state-2"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("AuthFlowUser(unknown) = %v", err)
	}
	// B neither sees nor takes A's flow.
	if _, err := b.GetAuthFlow(ctx, "state-1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("B GetAuthFlow = %v", err)
	}
	if _, err := b.ClaimAuthFlow(ctx, "state-1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("B ClaimAuthFlow = %v", err)
	}
	if err := b.PutAuthFlow(ctx, "state-1", "x", []byte(`{}`), soon); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("B PutAuthFlow over A's = %v", err)
	}

	// Another process's store of A (another replica) takes it, once.
	a2 := userT(t, openPostgresT(t, dsn, keyDir), ua.ID)
	f, err := a2.ClaimAuthFlow(ctx, "state-1")
	if err != nil || f.ServerID != "x" || !bytes.Equal(f.Record, record) || !f.Claimed {
		t.Fatalf("ClaimAuthFlow = %+v, %v", f, err)
	}
	for _, s := range []*DB{a, a2} {
		if _, err := s.ClaimAuthFlow(ctx, "state-1"); !errors.Is(err, ErrAuthFlowTaken) {
			t.Fatalf("second ClaimAuthFlow = %v, want ErrAuthFlowTaken", err)
		}
	}
	sub := a.Subscribe(ctx)
	if err := a2.FinishAuthFlow(ctx, "state-1", []byte(`{"ok":true}`), time.Minute); err != nil {
		t.Fatal(err)
	}
	<-sub // the poller reports the other process's write
	if f, err := a.GetAuthFlow(ctx, "state-1"); err != nil || string(f.Outcome) != `{"ok":true}` {
		t.Fatalf("GetAuthFlow after Finish = %+v, %v", f, err)
	}
	if err := a.DeleteAuthFlow(ctx, "state-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.GetAuthFlow(ctx, "state-1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetAuthFlow after Delete = %v", err)
	}

	// Moved to B with SQL, the record does not open (the user is in the
	// associated data).
	if err := a.PutAuthFlow(ctx, "state-3", "x", record, soon); err != nil {
		t.Fatal(err)
	}
	if _, err := p.DB().Exec(`UPDATE oauth_flows SET user_id = $1 WHERE state_hash = $2`, ub.ID, AuthStateHash("state-3")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.GetAuthFlow(ctx, "state-3"); !errors.Is(err, ErrSealOpen) {
		t.Fatalf("B GetAuthFlow of a moved record = %v, want ErrSealOpen", err)
	}

	// Expired: no one's, and purged by the next write.
	if err := a.PutAuthFlow(ctx, "state-4", "x", record, time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.ClaimAuthFlow(ctx, "state-4"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ClaimAuthFlow(expired) = %v", err)
	}
	if _, err := p.AuthFlowUser(ctx, "state-4"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("AuthFlowUser(expired) = %v", err)
	}
	if err := a.PutAuthFlow(ctx, "state-5", "x", record, soon); err != nil {
		t.Fatal(err)
	}
	if n := pgCount(t, p, "oauth_flows", ua.ID); n != 1 {
		t.Fatalf("%d flows of A after the purge, want 1 (state-5)", n)
	}
	// A removed server takes its flows along.
	if err := a.DeleteServer(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if n := pgCount(t, p, "oauth_flows", ua.ID); n != 0 {
		t.Fatalf("%d flows of A after its server went, want 0", n)
	}

	personal := openT(t, t.TempDir())
	if err := personal.PutAuthFlow(ctx, "s", "x", record, soon); err == nil {
		t.Fatal("a personal store took a shared flow")
	}
}
