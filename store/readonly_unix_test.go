//go:build unix

package store

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// runAsNobody runs TestReadOnlyDataDir as uid/gid 65534 in a directory it
// owns, from a copy of the test binary it can execute.
func runAsNobody(t *testing.T) {
	const nobody = 65534
	base, err := os.MkdirTemp("", "remotemcp-ro-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	for p := filepath.Dir(base); ; p = filepath.Dir(p) {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm()&0o001 == 0 {
			t.Skipf("cannot run as uid %d: %s is not traversable by others", nobody, p)
		}
		if p == filepath.Dir(p) {
			break
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Skipf("cannot find the test binary to re-run as uid %d: %v", nobody, err)
	}
	bin := filepath.Join(base, "store.test")
	copyFile(t, exe, bin, 0o755)
	data := filepath.Join(base, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(data, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestReadOnlyDataDir$", "-test.v", "-test.count=1", "-test.timeout=2m")
	cmd.Dir = base
	// Coverage output of the copy would go to a directory nobody cannot
	// write; it has nothing to add anyway.
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GOCOVERDIR=") })
	cmd.Env = append(env, roHelperEnv+"="+data)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		t.Fatalf("TestReadOnlyDataDir as uid %d failed (%v):\n%s", nobody, err, out)
	case err != nil:
		t.Skipf("cannot run the test binary as uid %d: %v", nobody, err)
	}
	t.Logf("as uid %d:\n%s", nobody, out)
	if !bytes.Contains(out, []byte("--- PASS: TestReadOnlyDataDir")) {
		t.Fatal("the unprivileged run did not pass TestReadOnlyDataDir")
	}
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
