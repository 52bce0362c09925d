package remotemcp

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// cliCommand matches a CLI command in a text: "remotemcp" and one of the
// CLI's commands, or a command of a group ("servers set", "tools
// accept"), with or without "remotemcp".
var cliCommand = regexp.MustCompile(`\bremotemcp (connect|disconnect|status|serve|open|logs|tools|call|prompts|prompt|resources|read|elicitations|version)\b` +
	`|\b(servers (add|set|rm|show|import|enable|disable)|tools (review|accept)|auth (login|logout)|grants (approve|revoke|pending)|mcp token|hosts (connect|disconnect))\b`)

// notAdvice are texts that name a command as a record of what the
// person did, not as advice.
var notAdvice = map[string]bool{
	"user: servers add": true, // hostperm.ByServersAdd: the grant's provenance
}

// TestLibrariesNameNoCommand (issue #21 item 3): the libraries return
// typed errors with the data a surface needs (server, tool, hash, time,
// limit) and put no CLI command into any text; the CLI, the page and the
// agent's results add what to run from localapi.Table (internal/advice).
// Comments may name commands; string literals of non-test code may not.
func TestLibrariesNameNoCommand(t *testing.T) {
	fset := token.NewFileSet()
	for _, dir := range []string{"agent", "manager", "session", "oauth", "store", "elicit", "hostperm", "pin", "config", "toolsearch"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatalf("%s: %v", fset.Position(lit.Pos()), err)
				}
				if m := cliCommand.FindString(s); m != "" && !notAdvice[s] {
					t.Errorf("%s: a library names the CLI command %q; return a typed error and give the words to localapi.Table", fset.Position(lit.Pos()), m)
				}
				return true
			})
		}
	}
}
