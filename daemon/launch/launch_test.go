package launch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A daemon that exits alone is reported with the last line it logged
// since this start, not with an earlier run's words (guard: moved from
// cmd/remotemcp with #21 item 7).
func TestStartReportsWhyTheDaemonExited(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, LogName), []byte("remotemcp: an old failure\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var got []string
	spawn := func(_ context.Context, args []string, logf *os.File) (int, <-chan struct{}, func(), error) {
		got = args
		logf.WriteString("starting\nremotemcp: open the data directory: locked\n\n")
		done := make(chan struct{})
		close(done)
		return 42, done, func() {}, nil
	}
	_, _, err := Start(t.Context(), Options{Dir: dir, Listen: "127.0.0.1:7717", Spawn: spawn})
	want := "start the daemon: it exited: open the data directory: locked (log: " + filepath.Join(dir, LogName) + ")"
	if err == nil || err.Error() != want {
		t.Fatalf("Start: %v, want %q", err, want)
	}
	if strings.Join(got, " ") != "--data-dir "+dir+" serve --addr 127.0.0.1:7717 --addr-fallback" {
		t.Fatalf("spawned with %q", got)
	}
}

func TestLastLogLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "log")
	os.WriteFile(p, []byte("old\nremotemcp: new\n"), 0o600)
	for _, tc := range []struct {
		from int64
		want string
	}{{0, "new"}, {4, "new"}, {19, ""}} {
		if got := lastLogLine(p, tc.from); got != tc.want {
			t.Errorf("lastLogLine(from %d) = %q, want %q", tc.from, got, tc.want)
		}
	}
}
