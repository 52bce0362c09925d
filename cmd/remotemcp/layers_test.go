package main

import (
	"bytes"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestCLIIsFlagsAndRendering (issue #21 item 7): the CLI reaches the
// engine only through the local API, so it imports none of the packages
// that hold the engine's state; and what is not flags, command wiring and
// the calls that render the answers lives in packages of its own, which
// keeps it under maxCLILines of non-test Go.
func TestCLIIsFlagsAndRendering(t *testing.T) {
	const module = "github.com/remotemcp/remotemcp/"
	forbidden := []string{"store", "manager", "session", "oauth", "elicit", "agent", "hostperm", "engine"}
	const maxCLILines = 3000
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		lines += bytes.Count(src, []byte("\n"))
		f, err := parser.ParseFile(fset, name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if pkg, ok := strings.CutPrefix(path, module); ok && slices.Contains(forbidden, pkg) {
				t.Errorf("%s imports %s: go through the local API (localapi) instead", name, path)
			}
		}
	}
	if lines >= maxCLILines {
		t.Errorf("cmd/remotemcp has %d lines of non-test Go, want fewer than %d: move what is not flags and rendering into a package of its own", lines, maxCLILines)
	}
}
