package hosttoken

import (
	"context"
	"strings"
	"testing"

	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/hosts"
	"github.com/remotemcp/remotemcp/localapi"
	"github.com/remotemcp/remotemcp/store"
)

// memKV is a frontend.KV in memory.
type memKV map[string][]byte

func (m memKV) GetKV(_ context.Context, ns, key string) ([]byte, error) {
	v, ok := m[ns+"/"+key]
	if !ok {
		return nil, store.ErrNotFound
	}
	return v, nil
}
func (m memKV) PutKV(_ context.Context, ns, key string, v []byte) error {
	m[ns+"/"+key] = v
	return nil
}
func (m memKV) DeleteKV(_ context.Context, ns, key string) error { delete(m, ns+"/"+key); return nil }
func (m memKV) ListKV(_ context.Context, ns string) (map[string][]byte, error) {
	out := map[string][]byte{}
	for k, v := range m {
		if key, ok := strings.CutPrefix(k, ns+"/"); ok {
			out[key] = v
		}
	}
	return out, nil
}

// The Service's errors carry the API's codes and the tokens' own words;
// a host's tokens are named host-ID, host-ID-2 …
func TestService(t *testing.T) {
	ctx := t.Context()
	s := New(memKV{})
	name, tok, err := CreateForHost(ctx, s, "cursor")
	if err != nil || name != "host-cursor" || !strings.HasPrefix(tok, frontend.TokenPrefix) {
		t.Fatalf("first: %s %s %v", name, tok, err)
	}
	if name, _, err := CreateForHost(ctx, s, "cursor"); err != nil || name != "host-cursor-2" {
		t.Fatalf("second: %s %v", name, err)
	}
	if got, err := s.CheckHostToken(ctx, tok); err != nil || got.Name != "host-cursor" || got.CreatedAt.IsZero() {
		t.Fatalf("check: %+v %v", got, err)
	}
	for _, tc := range []struct {
		err  error
		code string
	}{
		{second(s.CreateHostToken(ctx, "host-cursor")), localapi.CodeConflict},
		{second(s.CreateHostToken(ctx, "a b")), localapi.CodeBadRequest},
		{s.RevokeHostToken(ctx, "nope"), localapi.CodeNotFound},
		{second(s.CheckHostToken(ctx, "rmcp_nope")), localapi.CodeNotFound},
	} {
		if !localapi.HasCode(tc.err, tc.code) {
			t.Errorf("%v: want %s", tc.err, tc.code)
		}
	}
	for _, tc := range []struct {
		name, id string
		want     bool
	}{
		{"host-cursor", "cursor", true},
		{"host-cursor-12", "cursor", true},
		{"host-cursor-x", "cursor", false},
		{"host-cursor2", "cursor", false},
		{"mine", "cursor", false},
	} {
		if got := IsForHost(tc.name, tc.id); got != tc.want {
			t.Errorf("IsForHost(%q, %q) = %v", tc.name, tc.id, got)
		}
	}
	if got := Redact("Bearer " + tok + "\n"); got != "Bearer rmcp_[redacted]\n" {
		t.Errorf("Redact: %q", got)
	}
}

func second[T any](_ T, err error) error { return err }

// ConnectHTTP keeps a valid token of an unchanged entry, makes one for a
// new or moved entry and then revokes the replaced entry's own token, and
// creates none in a dry run (#21 item 7: moved from cmd/remotemcp).
func TestConnectHTTP(t *testing.T) {
	ctx := t.Context()
	s := New(memKV{})
	h, _ := hosts.Lookup("cursor")
	f, err := h.File(hosts.System{OS: "linux", Home: t.TempDir()}, "")
	if err != nil {
		t.Fatal(err)
	}
	entry := func() *hosts.Entry {
		t.Helper()
		e, ok, err := f.Entry()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return nil
		}
		return &e
	}
	const u1, u2 = "http://127.0.0.1:8765/mcp", "http://127.0.0.1:8766/mcp"
	if res, err := ConnectHTTP(ctx, nil, f, nil, u1, true, nil); err != nil || res.Created != "" || !res.Change.Changed || res.Change.Written ||
		!strings.Contains(res.Change.Diff(), DryRunToken) {
		t.Fatalf("dry run: %+v %v", res, err)
	}
	first, err := ConnectHTTP(ctx, s, f, entry(), u1, false, nil)
	if err != nil || first.Created != "host-cursor" || first.Revoked != "" || !first.Change.Written {
		t.Fatalf("first connect: %+v %v", first, err)
	}
	if again, err := ConnectHTTP(ctx, s, f, entry(), u1, false, nil); err != nil || again.Created != "" || again.Change.Changed {
		t.Fatalf("connect again: %+v %v", again, err)
	}
	moved, err := ConnectHTTP(ctx, s, f, entry(), u2, false, nil)
	if err != nil || moved.Created != "host-cursor-2" || moved.Revoked != "host-cursor" {
		t.Fatalf("moved: %+v %v", moved, err)
	}
	if names := tokenNames(t, s); strings.Join(names, " ") != "host-cursor-2" {
		t.Fatalf("tokens after the move: %v", names)
	}
	// Disconnecting: the entry's own token goes with it, a token named
	// otherwise stays.
	old := entry()
	if _, err := f.Disconnect(false); err != nil {
		t.Fatal(err)
	}
	if got := RevokeReplaced(ctx, s, "cursor", *old); got != "host-cursor-2" {
		t.Fatalf("RevokeReplaced = %q", got)
	}
	mine, _ := s.CreateHostToken(ctx, "mine")
	if got := RevokeReplaced(ctx, s, "cursor", hosts.NewHTTPEntry(u1, mine.Token)); got != "" {
		t.Fatalf("RevokeReplaced revoked the user's own token %q", got)
	}
}

func tokenNames(t *testing.T, s Service) []string {
	t.Helper()
	list, err := s.HostTokens(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, x := range list {
		names = append(names, x.Name)
	}
	return names
}
