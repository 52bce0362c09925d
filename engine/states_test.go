package engine_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/remotemcp/remotemcp/engine"
	"github.com/remotemcp/remotemcp/hostperm"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
	"github.com/remotemcp/remotemcp/manager"
	"github.com/remotemcp/remotemcp/oauth"
	"github.com/remotemcp/remotemcp/session"
)

// Issue #21 item 3: every reason code the manager can report has words in
// the one table, for the page (label, style, hint; why for a sign-in)
// and the CLI (what to do); every login reason of oauth is a manager code;
// every state but error has its words; and the words the manager puts
// before a chain are the table's leads, so the CLI cuts the chain without
// reading the message.
func TestEveryReasonCodeHasWords(t *testing.T) {
	needsAuth := map[manager.ReasonCode]bool{}
	for _, c := range []manager.ReasonCode{manager.CodeSignedOut, manager.CodeNotSignedIn, manager.CodeLoginRequired,
		manager.CodeNoRefreshToken, manager.CodeRefreshRefused, manager.CodeClientRejected, manager.CodeIssuerChanged,
		manager.CodeInsufficientScope, manager.CodeNeedsAuth} {
		needsAuth[c] = true
	}
	// The codes whose failure the person cannot act on from the CLI:
	// the page says "try again", the CLI nothing more than the reason.
	noCLI := map[manager.ReasonCode]bool{manager.CodeCanceled: true, manager.CodeUnknown: true}
	for _, c := range manager.ReasonCodes {
		w, ok := localapi.Table.Reasons[localapi.ReasonCode(c)]
		switch {
		case !ok:
			t.Errorf("code %q: no words", c)
		case needsAuth[c] && w.Why == "":
			t.Errorf("code %q: no words for why it needs a sign-in", c)
		case !needsAuth[c] && (w.Label == "" || w.Class == "" || w.Hint == ""):
			t.Errorf("code %q: page words %+v", c, w)
		case !needsAuth[c] && !noCLI[c] && w.CLI == "":
			t.Errorf("code %q: no CLI advice", c)
		}
	}
	known := map[manager.ReasonCode]bool{}
	for _, c := range manager.ReasonCodes {
		known[c] = true
	}
	for _, r := range oauth.LoginReasons {
		if !known[manager.ReasonCode(r)] || !needsAuth[manager.ReasonCode(r)] {
			t.Errorf("oauth login reason %q is no needs-auth code of the manager", r)
		}
	}
	for _, s := range []manager.State{manager.StateDisconnected, manager.StateConnecting, manager.StateReady,
		manager.StateReconnecting, manager.StateIdle, manager.StateNeedsAuth} {
		if w := localapi.Table.States[localapi.State(s)]; w.Label == "" || w.Class == "" {
			t.Errorf("state %q: words %+v", s, w)
		}
	}
	if w := localapi.Table.States[localapi.StateNeedsAuth]; w.CLI == "" || w.Hint == "" || w.Waiting == "" || !strings.Contains(w.Scopes, "{scopes}") {
		t.Errorf("needs-auth words %+v", w)
	}
	for _, tc := range []struct {
		lead, want string
	}{
		{localapi.Table.States[localapi.StateReconnecting].Lead, manager.LeadReconnecting},
		{localapi.Table.States[localapi.StateNeedsAuth].Lead, manager.LeadNeedsAuth},
		{localapi.Table.Reasons[localapi.ReasonSessionExpired].Lead, manager.LeadSessionExpired},
		{localapi.Table.Reasons[localapi.ReasonConnectionClosed].Lead, manager.LeadConnectionClosed},
	} {
		if tc.lead != tc.want {
			t.Errorf("lead %q; the manager writes %q", tc.lead, tc.want)
		}
	}
}

// Issue #21 item 3: the libraries' errors say what failed, never which
// CLI command to run; the CLI and the page say that from the words table.
// The error texts of oauth, session, hostperm and manager are read from
// their source (every errors.New / fmt.Errorf format and every string an
// Error method builds) and a few are exercised.
func TestLibraryErrorsNameNoCommand(t *testing.T) {
	// manager's pins.go and backoff.go are left: their texts reach the
	// model through a tool call's result, where the command is the advice
	// the model passes on (the call pipeline words them, item 2).
	skip := map[string]bool{"pins.go": true, "backoff.go": true}
	for _, pkg := range []string{"oauth", "session", "hostperm", "manager"} {
		files, err := filepath.Glob(filepath.Join("..", pkg, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") || skip[filepath.Base(name)] {
				continue
			}
			for _, lit := range errorTexts(t, name) {
				if strings.Contains(lit.text, `"remotemcp `) || strings.Contains(lit.text, "run remotemcp") {
					t.Errorf("%s: an error names a CLI command: %s", lit.pos, lit.text)
				}
			}
		}
	}
	for _, err := range []error{
		&session.HTTPStatusError{StatusCode: 401}, &session.HTTPStatusError{StatusCode: 404},
		&hostperm.PermissionRequiredError{Origin: "https://x.example", Purpose: hostperm.PurposeMCP, ServerID: "x"},
		&oauth.InsufficientScopeError{ServerID: "x", Missing: []string{"a"}, Scopes: []string{"a", "b"}},
		&oauth.LoginRequiredError{ServerID: "x", Reason: oauth.LoginNotSignedIn, Why: "this server has not been signed in to yet"},
	} {
		if strings.Contains(err.Error(), `"remotemcp `) || strings.Contains(err.Error(), "run remotemcp") {
			t.Errorf("%T: %q names a command", err, err)
		}
	}
}

type errorText struct {
	pos  token.Position
	text string
}

// errorTexts are the string literals of file's errors.New and
// fmt.Errorf calls and of its Error methods.
func errorTexts(t *testing.T, file string) []errorText {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []errorText
	lits := func(n ast.Node) {
		ast.Inspect(n, func(n ast.Node) bool {
			if bl, ok := n.(*ast.BasicLit); ok && bl.Kind == token.STRING {
				if s, err := strconv.Unquote(bl.Value); err == nil {
					out = append(out, errorText{fset.Position(bl.Pos()), s})
				}
			}
			return true
		})
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			if n.Name.Name == "Error" && n.Recv != nil {
				lits(n.Body)
				return false
			}
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && (x.Name == "errors" && sel.Sel.Name == "New" || x.Name == "fmt" && sel.Sel.Name == "Errorf") {
					lits(n)
					return false
				}
			}
		}
		return true
	})
	return out
}

// Issue #21 item 3: building a server's view reads the store and writes
// nothing. Before, a ready server's view cleared its sign-out mark in the
// store (a write, and a change every process saw) on every listing.
func TestServerViewsWriteNothing(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	// The manager connects fx on its own (connect on startup): no
	// engine method has seen it ready before the listing.
	c := openEngine(t, "", engine.Options{})
	ctx := testkit.Context(t)
	addServer(t, c, localapi.AddServerRequest{ID: "fx", URL: f.URL()})
	addServer(t, c, localapi.AddServerRequest{ID: "secure", URL: f.URL(), Auth: "oauth", ConnectOnStartup: new(false)})
	testkit.WaitFor(t, "fx ready", func() bool {
		st, err := c.Manager.ServerStatusOf("fx")
		return err == nil && st.State == manager.StateReady
	})
	// The connect stores the catalog after it returns: that write is the
	// connect's, not the listing's.
	testkit.WaitFor(t, "the stored catalog", func() bool {
		_, err := c.Store.GetKV(ctx, manager.CatalogNamespace, "fx")
		return err == nil
	})
	// Another process signed fx out while this one holds its session.
	if err := c.Store.PutKV(ctx, "remotemcp_signed_out", "fx", []byte("1")); err != nil {
		t.Fatal(err)
	}
	before, err := c.Store.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	feed := c.Store.Subscribe(ctx)
	defer func() {
		for {
			select {
			case ch := <-feed:
				t.Logf("change %+v", ch)
			default:
				return
			}
		}
	}()
	for range 3 {
		list, err := c.Servers(ctx)
		if err != nil || len(list) != 2 {
			t.Fatalf("servers: %v %+v", err, list)
		}
		for _, id := range []string{"fx", "secure"} {
			if _, err := c.Server(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
	}
	after, err := c.Store.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("listing the servers wrote the store: revision %d → %d", before, after)
	}
	v, err := c.Server(ctx, "secure")
	if err != nil || v.State != localapi.StateNeedsAuth || v.Reason == nil || v.Reason.Code != localapi.ReasonNotSignedIn {
		t.Errorf("never signed in: %+v %v; want needs-auth, code not-signed-in", v, err)
	}
}
