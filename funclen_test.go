package remotemcp

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the longest a function may be, counted from its func
// keyword to its closing brace, before its doc comment must say why
// (issue #21 item 4).
const maxFuncLines = 80

// TestFuncLenExplained (issue #21 item 4): every non-test function in the
// module longer than maxFuncLines lines, outside the test servers, carries
// a doc comment paragraph starting with "Long:" that says why it is one
// function. The marker is fixed so this test can find it; the reason after
// it is for the reader.
func TestFuncLenExplained(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") ||
				name == "testdata" || filepath.ToSlash(path) == "internal/testserver") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			if lines > maxFuncLines && !hasLongReason(fn.Doc) {
				t.Errorf("%s: %s is %d lines (over %d) and its doc comment has no \"Long:\" line saying why",
					fset.Position(fn.Pos()), funcName(fn), lines, maxFuncLines)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk the module: %v", err)
	}
}

// hasLongReason reports whether doc has a line "Long: <reason>" with a
// non-empty reason.
func hasLongReason(doc *ast.CommentGroup) bool {
	if doc == nil {
		return false
	}
	for line := range strings.SplitSeq(doc.Text(), "\n") {
		if reason, ok := strings.CutPrefix(line, "Long:"); ok && strings.TrimSpace(reason) != "" {
			return true
		}
	}
	return false
}

// funcName names fn as Recv.Name for methods, Name otherwise.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	typ := fn.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	switch x := typ.(type) {
	case *ast.IndexExpr:
		typ = x.X
	case *ast.IndexListExpr:
		typ = x.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}
