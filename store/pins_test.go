package store

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
)

// Issue #20 item 3 (tool pinning): pins are first-sight, a change is held
// beside the pin until accepted, pins survive a reopen, and removing the
// server removes them (a server re-added starts fresh).
func testToolPins(t *testing.T, b backend) {
	ctx := context.Background()
	s := b.open(t)
	if err := s.AddServer(ctx, noneServer("fs", "https://fs.example/mcp")); err != nil {
		t.Fatal(err)
	}
	ch := s.Subscribe(ctx)
	apply := func(ops ...PinOp) {
		t.Helper()
		if err := s.ApplyPins(ctx, "fs", ops); err != nil {
			t.Fatal(err)
		}
	}
	pins := func() map[string]ToolPin {
		t.Helper()
		p, err := s.ToolPins(ctx, "fs")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	apply(PinOp{Action: PinFirst, Tool: "read", Hash: "h1", Definition: []byte(`{"description":"a"}`)},
		PinOp{Action: PinFirst, Tool: "list", Hash: "l1", Definition: []byte(`{}`)})
	if c := recv(t, ch, hang); c.Namespace != PinNamespace || c.ServerID != "fs" {
		t.Fatalf("change = %+v", c)
	}
	// First sight again keeps the first pin, and changes nothing.
	apply(PinOp{Action: PinFirst, Tool: "read", Hash: "h2", Definition: []byte(`{"description":"b"}`)})
	if p := pins()["read"]; p.Hash != "h1" || string(p.Definition) != `{"description":"a"}` || p.Held != nil {
		t.Fatalf("pin after a second first sight = %+v", p)
	}
	apply(PinOp{Action: PinHold, Tool: "read", Hash: "h2", Definition: []byte(`{"description":"b"}`)})
	recv(t, ch, hang)
	if p := pins()["read"]; p.Hash != "h1" || p.Held == nil || p.Held.Hash != "h2" || string(p.Held.Definition) != `{"description":"b"}` {
		t.Fatalf("held pin = %+v", p)
	}
	// The same held definition again, and a hold of the pinned one, are no
	// change: no event (the next event is the accept's).
	apply(PinOp{Action: PinHold, Tool: "read", Hash: "h2", Definition: []byte(`{"description":"b"}`)},
		PinOp{Action: PinHold, Tool: "list", Hash: "l1", Definition: []byte(`{}`)})
	held, err := s.HeldTools(ctx, "")
	if err != nil || len(held) != 1 || held[0].Tool != "read" {
		t.Fatalf("HeldTools = %+v, %v", held, err)
	}
	if _, err := s.AcceptHeld(ctx, "fs", []string{"read"}, map[string]string{"read": "h3"}); !errors.Is(err, ErrHeldChanged) {
		t.Fatalf("accept of another definition than shown: %v", err)
	}
	if _, err := s.AcceptHeld(ctx, "fs", []string{"list"}, nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("accept of a tool without a held change: %v", err)
	}
	got, err := s.AcceptHeld(ctx, "fs", []string{"read"}, map[string]string{"read": "h2"})
	if err != nil || len(got) != 1 || got[0].Hash != "h2" {
		t.Fatalf("AcceptHeld = %+v, %v", got, err)
	}
	if c := recv(t, ch, hang); c.Namespace != PinNamespace {
		t.Fatalf("change = %+v (a no-op published an event)", c)
	}
	if p := pins()["read"]; p.Hash != "h2" || p.Held != nil {
		t.Fatalf("pin after accept = %+v", p)
	}
	// Release and replace.
	apply(PinOp{Action: PinHold, Tool: "list", Hash: "l2", Definition: []byte(`{"title":"x"}`)})
	apply(PinOp{Action: PinRelease, Tool: "list"})
	if p := pins()["list"]; p.Held != nil || p.Hash != "l1" {
		t.Fatalf("released pin = %+v", p)
	}
	apply(PinOp{Action: PinHold, Tool: "list", Hash: "l2", Definition: []byte(`{"title":"x"}`)},
		PinOp{Action: PinReplace, Tool: "list", Hash: "l3", Definition: []byte(`{"title":"y"}`)})
	if p := pins()["list"]; p.Held != nil || p.Hash != "l3" {
		t.Fatalf("replaced pin = %+v", p)
	}
	// Accept all.
	apply(PinOp{Action: PinHold, Tool: "list", Hash: "l4", Definition: []byte(`{}`)},
		PinOp{Action: PinHold, Tool: "read", Hash: "h5", Definition: []byte(`{}`)})
	if got, err := s.AcceptHeld(ctx, "fs", nil, nil); err != nil || len(got) != 2 {
		t.Fatalf("accept all = %+v, %v", got, err)
	}

	// A reopened store has them.
	s.Close()
	s = b.again(t, s)
	if p := pins(); len(p) != 2 || p["list"].Hash != "l4" || p["read"].Hash != "h5" {
		t.Fatalf("pins after reopen = %+v", p)
	}
	// Removed and re-added: fresh.
	if err := s.DeleteServer(ctx, "fs"); err != nil {
		t.Fatal(err)
	}
	if err := s.AddServer(ctx, noneServer("fs", "https://fs.example/mcp")); err != nil {
		t.Fatal(err)
	}
	if p := pins(); len(p) != 0 {
		t.Fatalf("pins of a re-added server = %+v", p)
	}
	// A server that does not exist cannot be pinned.
	if err := s.ApplyPins(ctx, "nope", []PinOp{{Action: PinFirst, Tool: "x", Hash: "h", Definition: []byte(`{}`)}}); err == nil {
		t.Fatal("pinned a tool of a server that does not exist")
	}
}

// Issue #20 item 3 review, item 1: an evaluation reads names, hashes and
// sizes only; the sizes count the pinned and the held definition.
func testPinSummaries(t *testing.T, b backend) {
	ctx := context.Background()
	s := b.open(t)
	if err := s.AddServer(ctx, noneServer("fs", "https://fs.example/mcp")); err != nil {
		t.Fatal(err)
	}
	big := []byte(`{"description":"` + strings.Repeat("é", 3000) + `"}`)
	if err := s.ApplyPins(ctx, "fs", []PinOp{
		{Action: PinFirst, Tool: "read", Hash: "h1", Definition: big},
		{Action: PinFirst, Tool: "list", Hash: "l1", Definition: []byte(`{}`)},
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.ApplyPins(ctx, "fs", []PinOp{{Action: PinHold, Tool: "list", Hash: "l2", Definition: []byte(`{"a":1}`)}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.PinSummaries(ctx, "fs")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]PinSummary{
		"read": {Tool: "read", Hash: "h1", Bytes: int64(len(big))},
		"list": {Tool: "list", Hash: "l1", HeldHash: "l2", Bytes: 2, HeldBytes: 7},
	}
	if !maps.Equal(got, want) {
		t.Fatalf("PinSummaries = %+v, want %+v", got, want)
	}
	held, err := s.HeldHashes(ctx, "fs")
	if err != nil || !maps.Equal(held, map[string]string{"list": "l2"}) {
		t.Fatalf("HeldHashes = %v, %v", held, err)
	}
}
