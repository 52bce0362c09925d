package hosts

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// fuzzEdit checks the editors on arbitrary files of host id: no panic, no
// edit that fails its own check, idempotent, and a removal that leaves
// everything else as it was.
func fuzzEdit(f *testing.F, id, glob string) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "*", glob))
	for _, s := range seeds {
		if b, err := os.ReadFile(s); err == nil {
			f.Add(b)
		}
	}
	h, _ := Lookup(id)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, e := range []*Entry{&fixtureEntry, nil} {
			out, changed, err := h.editData(data, e)
			if errors.Is(err, errEditBug) {
				t.Fatalf("edit (set %v): %v\n%q", e != nil, err, data)
			}
			if err != nil || !changed {
				continue
			}
			if out2, changed2, err := h.editData(out, e); err != nil || changed2 || string(out2) != string(out) {
				t.Fatalf("second edit (set %v): changed %v, %v\n%q", e != nil, changed2, err, data)
			}
			if e == nil {
				continue
			}
			back, _, err := h.editData(out, nil)
			if err != nil {
				t.Fatalf("remove after add: %v\n%q", err, out)
			}
			before, _ := codecs[h.Format].decode(data)
			after, err := codecs[h.Format].decode(back)
			if err != nil || !reflect.DeepEqual(withoutEntry(before, h.ServersKey), withoutEntry(after, h.ServersKey)) {
				t.Fatalf("add then remove changed the document: %v\n%q\n%q", err, data, back)
			}
		}
	})
}

func FuzzEditJSONC(f *testing.F) { fuzzEdit(f, "vscode", "*.json") }

func FuzzEditJSON(f *testing.F) { fuzzEdit(f, "claude-code", "*.json") }

func FuzzEditTOML(f *testing.F) { fuzzEdit(f, "codex", "*.toml") }
