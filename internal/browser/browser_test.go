package browser

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A URL with secrets reaches the browser through a 0600 file, never argv.
func TestRedirectPageIsPrivate(t *testing.T) {
	dir := t.TempDir()
	u := "http://127.0.0.1:7717/login?token=SECRET&x=<y>"
	page, err := WriteRedirectPage(dir, u)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(page)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("redirect page mode %v, %v", fi.Mode(), err)
	}
	b, _ := os.ReadFile(page)
	if !strings.Contains(string(b), "token=SECRET&amp;x=&lt;y&gt;") || strings.Contains(string(b), "<y>") {
		t.Fatalf("page does not carry the escaped URL: %s", b)
	}
	if filepath.Dir(page) != filepath.Join(dir, "open") {
		t.Fatalf("page outside the data directory: %s", page)
	}
}
