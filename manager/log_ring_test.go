package manager

import (
	"testing"

	"github.com/remotemcp/remotemcp/session"
)

// The request log keeps the newest LogSize exchanges, oldest first, and
// grows only as exchanges come.
func TestRequestLogRing(t *testing.T) {
	for _, n := range []int{0, 1, LogSize - 1, LogSize, LogSize + 1, 3*LogSize + 7} {
		var l requestLog
		for i := range n {
			l.add(session.Exchange{Status: i})
		}
		got := l.snapshot()
		want := min(n, LogSize)
		if len(got) != want {
			t.Fatalf("%d added: %d kept, want %d", n, len(got), want)
		}
		for i, ex := range got {
			if ex.Status != n-want+i {
				t.Fatalf("%d added: entry %d is %d, want %d", n, i, ex.Status, n-want+i)
			}
		}
		if cap(l.ring) > LogSize {
			t.Fatalf("%d added: ring capacity %d", n, cap(l.ring))
		}
	}
	// A shelved log comes back on the next look, and the next exchange
	// goes after it.
	var l requestLog
	l.unshelve = func() []session.Exchange { return []session.Exchange{{Status: 1}, {Status: 2}} }
	l.add(session.Exchange{Status: 3})
	if got := l.snapshot(); len(got) != 3 || got[0].Status != 1 || got[2].Status != 3 {
		t.Fatalf("after unshelving: %+v", got)
	}
}
