//go:build unix

package main

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// reservePort chooses this scenario's redirect port and keeps it from the
// other scenarios the suite runs side by side until release. A port that
// was free a moment ago is not enough: the engine listens on it only once
// discovery and registration are done, and in between another scenario's
// client (or any listen on port 0) could take it ("redirect port taken",
// seen in CI). So the port comes from below the kernel's ephemeral range,
// where no listen on port 0 lands, and a lock file per port, held for the
// life of this process, keeps two harness processes from the same one.
func reservePort() (int, func(), error) {
	lo, hi := 20000, 29999
	if low := ephemeralLow(); low > 0 && low-1 < hi {
		hi = low - 1
	}
	if hi <= lo {
		return 0, nil, fmt.Errorf("choose a redirect port: no room below the ephemeral range (%d)", hi+1)
	}
	start := lo + rand.IntN(hi-lo+1)
	for i := 0; i <= hi-lo; i++ {
		p := lo + (start-lo+i)%(hi-lo+1)
		f, err := os.OpenFile(filepath.Join(os.TempDir(), "remotemcp-conformance-port-"+strconv.Itoa(p)+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			return 0, nil, fmt.Errorf("choose a redirect port: %w", err)
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			f.Close() // another scenario holds it
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			f.Close() // some other program has it
			continue
		}
		ln.Close()
		return p, func() { f.Close() }, nil
	}
	return 0, nil, fmt.Errorf("choose a redirect port: every port in %d-%d is taken", lo, hi)
}

// ephemeralLow is the low end of Linux's ephemeral port range, 0 when
// unknown.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(f[0])
	return n
}
