package frontend

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// nopCloser is a bytes.Buffer as the stream pageWriter writes to.
type nopCloser struct{ bytes.Buffer }

func (*nopCloser) Close() error { return nil }

// Pages whose markers are never written (go-sdk gave up on the message
// after encoding it) are not kept for the life of the session: at most
// maxHeldPages are held, the oldest let go first; a page held later is
// still written in its marker's place, and a let-go page's message fails
// without writing its marker.
func TestPageWriterBoundsHeldPages(t *testing.T) {
	out := &nopCloser{}
	w := newPageWriter(out)
	var markers [][]byte
	for i := range maxHeldPages + 10 {
		markers = append(markers, w.hold(fmt.Appendf(nil, `{"page":%d}`, i)))
	}
	if n := len(w.pending); n != maxHeldPages {
		t.Fatalf("%d pages held, want %d", n, maxHeldPages)
	}
	if _, ok := w.pending[1]; ok {
		t.Fatal("the oldest page is still held")
	}
	last := len(markers) - 1
	if _, err := w.Write(append(append([]byte(`{"result":`), markers[last]...), "}\n"...)); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf(`{"result":{"page":%d}}`+"\n", last); out.String() != want {
		t.Fatalf("wrote %q, want %q", out.String(), want)
	}
	if n := len(w.pending); n != maxHeldPages-1 {
		t.Fatalf("%d pages held after one was written, want %d", n, maxHeldPages-1)
	}
	// The page of the oldest marker was let go: its message fails, and
	// neither the marker (with the writer's nonce) nor anything else of
	// it is written.
	out.Reset()
	if _, err := w.Write(append(append([]byte(`{"result":`), markers[0]...), "}\n"...)); !errors.Is(err, errPageLetGo) {
		t.Fatalf("writing a let-go page's marker: %v, want errPageLetGo", err)
	}
	if out.Len() != 0 {
		t.Fatalf("wrote %q for a let-go page", out.String())
	}
}
