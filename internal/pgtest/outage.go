package pgtest

import (
	"context"
	"errors"
	"os"
	"sync"
	"syscall"
	"testing"
)

// Cluster is a PostgreSQL cluster of one test's own, which the test may
// stop and start again: the database going away under a running
// gateway, and coming back (issue #22, "Bad input and faults").
type Cluster struct {
	mu sync.Mutex
	c  *cluster
	up bool
}

// NewCluster starts a cluster for t alone (about a second), stopped and
// removed when t ends. Without PostgreSQL it skips or fails t as DSN
// does.
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	return NewClusterWith(t, ClusterOptions{})
}

// ClusterOptions tune NewClusterWith.
type ClusterOptions struct {
	// Settings are more server settings, name=value each (as postgres
	// -c takes them), e.g. "shared_preload_libraries=pg_stat_statements".
	Settings []string
}

// NewClusterWith is NewCluster with more server settings (the replicas'
// chaos test loads pg_stat_statements).
func NewClusterWith(t testing.TB, o ClusterOptions) *Cluster {
	t.Helper()
	c, err := startCluster(os.Getenv("PATH"), debianBins, o.Settings)
	if np := (*noPostgresError)(nil); errors.As(err, &np) {
		unavailable(t, np)
		return nil
	}
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	k := &Cluster{c: c, up: true}
	t.Cleanup(func() {
		k.mu.Lock()
		defer k.mu.Unlock()
		if err := k.c.stop(); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return k
}

// DSN creates a fresh, empty database on the cluster and returns its
// connection URL; it goes with the cluster.
func (k *Cluster) DSN(t testing.TB) string {
	t.Helper()
	dsn, _, err := createDatabase(context.Background(), k.c.adminURL(), t.Name())
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return dsn
}

// Stop ends the server at once (as a crash would: SIGQUIT), keeping its
// data.
func (k *Cluster) Stop(t testing.TB) {
	t.Helper()
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.up {
		k.c.halt()
		k.up = false
	}
}

// StopFast shuts the server down as pg_ctl stop -m fast does (SIGINT:
// sessions are ended, everything committed is written out), keeping its
// data: an operator's restart rather than a crash.
func (k *Cluster) StopFast(t testing.TB) {
	t.Helper()
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.up {
		k.c.shutdown(syscall.SIGINT)
		k.up = false
	}
}

// Log is the end of the server's log (for a failing test's output).
func (k *Cluster) Log() string { return k.c.log() }

// Start runs the server again on the same data and waits until it
// accepts connections.
func (k *Cluster) Start(t testing.TB) {
	t.Helper()
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.up {
		return
	}
	if err := k.c.start(); err != nil {
		t.Fatalf("pgtest: restart: %v", err)
	}
	k.up = true
}
