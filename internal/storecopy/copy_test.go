package storecopy

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/elicit"
	"github.com/remotemcp/remotemcp/frontend"
	"github.com/remotemcp/remotemcp/hostperm"
	"github.com/remotemcp/remotemcp/internal/pgtest"
	"github.com/remotemcp/remotemcp/manager"
	"github.com/remotemcp/remotemcp/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(pgtest.Wrap(m)) }

// personal is a personal store filled with one of every kind of record,
// closed again so that its files are at rest.
type personal struct {
	dir       string
	hostToken string
	servers   []config.Server
	secrets   map[store.SecretKey][]byte
	kv        map[string]map[string][]byte // namespace → key → value
	pins      map[string]map[string]store.ToolPin
}

// namespaces are the KV namespaces the product writes, which the tests
// fill and compare.
var namespaces = []string{hostperm.NamespaceGrants, hostperm.NamespacePending, frontend.TokenNamespace,
	elicit.Namespace, elicit.AnswersNamespace, manager.CatalogNamespace, manager.LogNamespace}

const grantedOrigin = "https://granted.example.com"

func newPersonal(t *testing.T) *personal {
	t.Helper()
	ctx := t.Context()
	p := &personal{dir: t.TempDir(), secrets: map[store.SecretKey][]byte{}, kv: map[string]map[string][]byte{}, pins: map[string]map[string]store.ToolPin{}}
	s, err := store.Open(ctx, p.dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	bearer := config.Server{ID: "bearer", Name: "Bearer", URL: "https://api.example.com/mcp", Enabled: true,
		Auth:    config.Auth{Kind: config.AuthBearer, Token: "bearer-token-1"},
		Headers: map[string]string{"X-Api-Key": "header-value-1", "X-Empty": ""}}
	oauth := config.Server{ID: "oauth", Name: "OAuth", URL: "https://oauth.example.com/mcp", Enabled: true,
		Auth: config.Auth{Kind: config.AuthOAuth, ClientID: "client-1", ClientSecret: "client-secret-1"}}
	plain := config.Server{ID: "plain", Name: "Plain", URL: "https://plain.example.com/mcp", Auth: config.Auth{Kind: config.AuthNone}}
	for _, srv := range []config.Server{bearer, oauth, plain} {
		must(s.AddServer(ctx, srv))
	}
	bind := config.Binding{Resource: "https://oauth.example.com/mcp", Issuer: "https://issuer.example.com"}
	must(s.PutSecret(ctx, store.SecretKey{ServerID: "oauth", Purpose: store.PurposeRefreshToken, Binding: bind}, []byte("refresh-token-1")))
	must(s.PutSecret(ctx, store.SecretKey{ServerID: "oauth", Purpose: store.PurposeRegistration, Binding: bind}, []byte(`{"client_id":"dcr"}`)))

	b := hostperm.New(s, hostperm.Options{})
	must(b.Grant(ctx, grantedOrigin, hostperm.ByCLI))
	b.Close()
	if p.hostToken, err = frontend.NewTokens(s).Create(ctx, "laptop"); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{hostperm.NamespacePending, elicit.Namespace, elicit.AnswersNamespace, manager.CatalogNamespace, manager.LogNamespace} {
		must(s.PutKV(ctx, ns, "k-"+ns, []byte(`{"what":"`+ns+`"}`)))
	}

	must(s.ApplyPins(ctx, "bearer", []store.PinOp{
		{Action: store.PinFirst, Tool: "steady", Hash: "sha256:aa", Definition: []byte(`{"name":"steady"}`)},
		{Action: store.PinFirst, Tool: "changed", Hash: "sha256:bb", Definition: []byte(`{"name":"changed"}`)},
	}))
	must(s.ApplyPins(ctx, "bearer", []store.PinOp{{Action: store.PinHold, Tool: "changed", Hash: "sha256:cc", Definition: []byte(`{"name":"changed","v":2}`)}}))

	p.read(t, s)
	if len(p.secrets) != 6 { // bearer token, 2 headers, client secret, refresh token, registration
		t.Fatalf("the source holds %d secrets, want 6: %v", len(p.secrets), p.secrets)
	}
	return p
}

// read records what s holds, to compare a copy with.
func (p *personal) read(t *testing.T, s *store.DB) {
	t.Helper()
	ctx := t.Context()
	var err error
	if p.servers, err = s.ListServers(ctx); err != nil {
		t.Fatal(err)
	}
	for _, srv := range p.servers {
		keys, err := s.ListSecrets(ctx, srv.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			if p.secrets[k], err = s.GetSecret(ctx, k); err != nil {
				t.Fatal(err)
			}
		}
		if p.pins[srv.ID], err = s.ToolPins(ctx, srv.ID); err != nil {
			t.Fatal(err)
		}
	}
	for _, ns := range namespaces {
		if p.kv[ns], err = s.ListKV(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
}

// sums hashes the files of the personal store ("absent" for a missing
// one), to show that a copy leaves them as they were.
func (p *personal) sums(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, name := range []string{store.DBFileName, store.DBFileName + "-wal", "key"} {
		b, err := os.ReadFile(filepath.Join(p.dir, name))
		if errors.Is(err, os.ErrNotExist) {
			out[name] = "absent"
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		out[name] = hex.EncodeToString(sum[:])
	}
	return out
}

func (p *personal) open(t *testing.T) *store.DB {
	t.Helper()
	s, err := store.Open(t.Context(), p.dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// gateway is a gateway's database with its key directory.
type gateway struct {
	dsn, keyDir string
	pg          *store.Postgres
}

func newGateway(t *testing.T) *gateway {
	t.Helper()
	g := &gateway{dsn: pgtest.DSN(t), keyDir: t.TempDir()}
	g.reopen(t)
	return g
}

func (g *gateway) reopen(t *testing.T) {
	t.Helper()
	if g.pg != nil {
		g.pg.Close()
	}
	pg, err := store.OpenPostgres(t.Context(), g.dsn, store.PostgresOptions{KeyDir: g.keyDir})
	if err != nil {
		t.Fatal(err)
	}
	g.pg = pg
	t.Cleanup(func() { pg.Close() })
}

// user returns the store of the user email, adding the user if needed.
func (g *gateway) user(t *testing.T, email string) *store.DB {
	t.Helper()
	u, err := g.pg.UserByEmail(t.Context(), email)
	if errors.Is(err, store.ErrNotFound) {
		u, err = g.pg.AddUser(t.Context(), email)
	}
	if err != nil {
		t.Fatal(err)
	}
	db, err := g.pg.User(t.Context(), u.ID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// same fails unless dst holds exactly what p recorded.
func (p *personal) same(t *testing.T, dst *store.DB) {
	t.Helper()
	got := &personal{secrets: map[store.SecretKey][]byte{}, kv: map[string]map[string][]byte{}, pins: map[string]map[string]store.ToolPin{}}
	got.read(t, dst)
	if !reflect.DeepEqual(got.servers, p.servers) {
		t.Errorf("servers:\n got %+v\nwant %+v", got.servers, p.servers)
	}
	if !reflect.DeepEqual(got.secrets, p.secrets) {
		t.Errorf("secrets:\n got %q\nwant %q", got.secrets, p.secrets)
	}
	if !reflect.DeepEqual(got.kv, p.kv) {
		t.Errorf("records:\n got %q\nwant %q", got.kv, p.kv)
	}
	if !reflect.DeepEqual(got.pins, p.pins) {
		t.Errorf("pins:\n got %+v\nwant %+v", got.pins, p.pins)
	}
}

// Every kind of record moves into a gateway user, secrets sealed again
// for that user and still opening after the gateway is reopened; the
// host token made in the personal store works for the gateway user and
// is found by the gateway's lookup; the held pin stays held; the
// personal store's files are unchanged.
func TestCopyRoundTrip(t *testing.T) {
	ctx := t.Context()
	p := newPersonal(t)
	before := p.sums(t)
	g := newGateway(t)
	dst := g.user(t, "alice@example.com")
	rev0, err := dst.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}

	src := p.open(t)
	var steps []store.CopyStep
	r, err := store.Copy(ctx, src, dst, store.CopyOptions{Progress: func(s store.CopyStep, _ store.CopyReport) { steps = append(steps, s) }})
	if err != nil {
		t.Fatal(err)
	}
	src.Close()
	if after := p.sums(t); !reflect.DeepEqual(after, before) {
		t.Errorf("the copy changed the personal store's files:\nbefore %v\nafter  %v", before, after)
	}
	if want := []store.CopyStep{store.CopyRead, store.CopyCheck, store.CopyWrite, store.CopyVerify}; !reflect.DeepEqual(steps, want) {
		t.Errorf("progress steps %v, want %v", steps, want)
	}
	if want := []string{"bearer", "oauth", "plain"}; !reflect.DeepEqual(r.Servers, want) || r.Secrets != 6 || r.RecordCount() != 7 || r.Pins != 2 || r.Held != 1 {
		t.Errorf("report %s, want servers %v, 6 secrets, 7 records, 2 pins (1 held)", r, want)
	}
	if rev, err := dst.Revision(ctx); err != nil || rev != rev0+1 {
		t.Errorf("destination revision %d (%v), want %d: the copy is one write", rev, err, rev0+1)
	}
	p.same(t, dst)

	// The sealed secrets are the gateway user's: they open from a fresh
	// open of the database with the gateway's key file.
	g.reopen(t)
	dst = g.user(t, "alice@example.com")
	p.same(t, dst)
	if name, ok, err := frontend.NewTokens(dst).Check(ctx, p.hostToken); err != nil || !ok || name != "laptop" {
		t.Errorf("the personal host token in the gateway user: %q %v %v", name, ok, err)
	}
	if owner, err := g.pg.KVOwner(ctx, frontend.TokenNamespace, "sha256", frontend.HashToken(p.hostToken)); err != nil || owner != dst.User() {
		t.Errorf("the gateway finds the host token's owner %q (%v), want %q", owner, err, dst.User())
	}
	if ok, err := hostperm.New(dst, hostperm.Options{}).Allowed(ctx, grantedOrigin+"/mcp"); err != nil || !ok {
		t.Errorf("the grant of %s did not move: %v %v", grantedOrigin, ok, err)
	}
	if held, err := dst.HeldHashes(ctx, "bearer"); err != nil || held["changed"] != "sha256:cc" || len(held) != 1 {
		t.Errorf("held tools %v (%v), want changed held at sha256:cc", held, err)
	}

	// A second copy finds the servers and writes nothing.
	src = p.open(t)
	_, err = store.Copy(ctx, src, dst, store.CopyOptions{})
	if !errors.Is(err, store.ErrCopyNotEmpty) || !strings.Contains(err.Error(), "bearer, oauth, plain") || !strings.Contains(err.Error(), string(store.CopyCheck)) {
		t.Fatalf("second copy: %v, want ErrCopyNotEmpty naming the servers and the step", err)
	}
	if rev, _ := dst.Revision(ctx); rev != rev0+1 {
		t.Errorf("the refused second copy wrote: revision %d, want %d", rev, rev0+1)
	}
	p.same(t, dst)
}

// A destination user with servers of their own is refused, naming
// them, and nothing of theirs changes.
func TestCopyRefusesUserWithServers(t *testing.T) {
	ctx := t.Context()
	p := newPersonal(t)
	g := newGateway(t)
	dst := g.user(t, "bob@example.com")
	own := config.Server{ID: "mine", Name: "Mine", URL: "https://mine.example.com/mcp", Auth: config.Auth{Kind: config.AuthBearer, Token: "bobs"}}
	if err := dst.AddServer(ctx, own); err != nil {
		t.Fatal(err)
	}
	if err := dst.PutKV(ctx, manager.CatalogNamespace, "mine", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	want := &personal{secrets: map[store.SecretKey][]byte{}, kv: map[string]map[string][]byte{}, pins: map[string]map[string]store.ToolPin{}}
	want.read(t, dst)
	rev, _ := dst.Revision(ctx)

	_, err := store.Copy(ctx, p.open(t), dst, store.CopyOptions{})
	if !errors.Is(err, store.ErrCopyNotEmpty) || !strings.Contains(err.Error(), "(mine)") || !strings.Contains(err.Error(), "nothing was written") {
		t.Fatalf("copy into a user with servers: %v", err)
	}
	if got, _ := dst.Revision(ctx); got != rev {
		t.Errorf("revision %d, want %d", got, rev)
	}
	want.same(t, dst)
}

// A secret of the source that does not open stops the copy before
// anything is written, naming the secret.
func TestCopyRefusesUnopenableSecret(t *testing.T) {
	ctx := t.Context()
	p := newPersonal(t)
	db, err := sql.Open("sqlite", filepath.Join(p.dir, store.DBFileName))
	if err != nil {
		t.Fatal(err)
	}
	// Tamper with the refresh token: the same length, other bytes.
	if _, err := db.Exec(`UPDATE secrets SET sealed = zeroblob(length(sealed)) WHERE purpose = ?`, store.PurposeRefreshToken); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	g := newGateway(t)
	dst := g.user(t, "carol@example.com")
	rev, _ := dst.Revision(ctx)
	_, err = store.Copy(ctx, p.open(t), dst, store.CopyOptions{})
	if !errors.Is(err, store.ErrSealOpen) || !strings.Contains(err.Error(), `secret "oauth-refresh" of server "oauth"`) || !strings.Contains(err.Error(), string(store.CopyRead)) {
		t.Fatalf("copy of an unopenable secret: %v", err)
	}
	if got, _ := dst.Revision(ctx); got != rev {
		t.Errorf("revision %d, want %d", got, rev)
	}
	if srvs, err := dst.ListServers(ctx); err != nil || len(srvs) != 0 {
		t.Errorf("servers written: %v %v", srvs, err)
	}
	for _, ns := range namespaces {
		if kv, err := dst.ListKV(ctx, ns); err != nil || len(kv) != 0 {
			t.Errorf("records of %s written: %q %v", ns, kv, err)
		}
	}
}
