package localapi_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// module is this module's path: imports under it are followed.
const module = "github.com/remotemcp/remotemcp"

// internals are the packages whose types the API must not be made of:
// localapi owns its wire types (issue #21 item 5), so a change in one of
// them cannot change what the API sends unnoticed.
var internals = []string{"agent", "session", "hostperm", "manager", "store", "oauth", "elicit", "engine"}

// TestNoInternalImports: localapi imports none of the internal packages,
// directly or through another package of this module. It reads the
// import lines of the non-test files (go/parser, not the build), from
// localapi through every package of the module they lead to, so a file
// for another platform counts too.
func TestNoInternalImports(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	// via maps each package reached to the package that imported it, to
	// show the chain.
	via := map[string]string{module + "/localapi": ""}
	queue := []string{module + "/localapi"}
	for len(queue) > 0 {
		pkg := queue[0]
		queue = queue[1:]
		for _, imp := range moduleImports(t, root, pkg) {
			if _, seen := via[imp]; seen {
				continue
			}
			via[imp] = pkg
			if slices.Contains(internals, strings.TrimPrefix(imp, module+"/")) {
				chain := []string{imp}
				for p := pkg; p != ""; p = via[p] {
					chain = append(chain, p)
				}
				slices.Reverse(chain)
				t.Errorf("localapi imports %s: %s", imp, strings.Join(chain, " → "))
				continue
			}
			queue = append(queue, imp)
		}
	}
}

// moduleImports lists the imports of this module's packages in the
// non-test Go files of package pkg.
func moduleImports(t *testing.T, root, pkg string) []string {
	t.Helper()
	dir := filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")))
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("package %s: %v", pkg, err)
	}
	var out []string
	files := 0
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		files++
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatalf("package %s: %v", pkg, err)
		}
		for _, s := range f.Imports {
			p, err := strconv.Unquote(s.Path.Value)
			if err != nil {
				t.Fatalf("%s: import %s: %v", name, s.Path.Value, err)
			}
			if p == module || strings.HasPrefix(p, module+"/") {
				out = append(out, p)
			}
		}
	}
	if files == 0 {
		// A wrong directory would pass whatever localapi imports.
		t.Fatalf("package %s: no Go files in %s", pkg, dir)
	}
	return out
}
