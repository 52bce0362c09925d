package frontend_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/store"
)

// TestTokens: a created token checks as its name until revoked; the store
// holds its hash, never the token.
func TestTokens(t *testing.T) {
	ctx := t.Context()
	st, err := store.Open(ctx, t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tk := frontend.NewTokens(st)
	a, err := tk.Create(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := tk.Create(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tk.Create(ctx, "a"); !errors.Is(err, frontend.ErrTokenExists) {
		t.Fatalf("duplicate: %v", err)
	}
	raw, err := st.ListKV(ctx, frontend.TokenNamespace)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range raw {
		if strings.Contains(string(v), a) || strings.Contains(string(v), b) {
			t.Fatalf("record %s holds a token", k)
		}
	}
	for _, tc := range []struct {
		tok, name string
		ok        bool
	}{
		{a, "a", true},
		{b, "b", true},
		{"", "", false},
		{a + "x", "", false},
		{strings.TrimPrefix(a, frontend.TokenPrefix), "", false},
	} {
		name, ok, err := tk.Check(ctx, tc.tok)
		if err != nil || ok != tc.ok || name != tc.name {
			t.Errorf("Check(%.8s…) = %q %v %v, want %q %v", tc.tok, name, ok, err, tc.name, tc.ok)
		}
	}
	if err := tk.Revoke(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := tk.Check(ctx, a); ok {
		t.Fatal("a revoked token still checks")
	}
	if err := tk.Revoke(ctx, "a"); !errors.Is(err, frontend.ErrNoToken) {
		t.Fatalf("revoke twice: %v", err)
	}
	list, err := tk.List(ctx)
	if err != nil || len(list) != 1 || list[0].Name != "b" || list[0].Created.IsZero() {
		t.Fatalf("list: %v %+v", err, list)
	}
}
