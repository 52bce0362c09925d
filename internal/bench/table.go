package bench

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"
	"unicode/utf8"
)

// Row is one line of the result table. Empty cells print as "—".
type Row struct {
	Measure string
	GoSDK   string
	Remote  string
	Ratio   string
	Goal    string
}

// Table is the one table a run prints.
type Table struct {
	Rows []Row
}

// Add appends a row.
func (t *Table) Add(r Row) { t.Rows = append(t.Rows, r) }

// Write prints the table as Markdown, columns padded so it also reads as
// plain text.
func (t *Table) Write(w io.Writer) {
	head := Row{"measure", "go-sdk", "remotemcp", "ratio", "goal"}
	rows := append([]Row{head}, t.Rows...)
	cells := func(r Row) []string {
		c := []string{r.Measure, r.GoSDK, r.Remote, r.Ratio, r.Goal}
		for i := range c {
			if c[i] == "" {
				c[i] = "—"
			}
		}
		return c
	}
	width := make([]int, 5)
	for _, r := range rows {
		for i, c := range cells(r) {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	line := func(c []string) {
		var b strings.Builder
		b.WriteString("|")
		for i, s := range c {
			b.WriteString(" ")
			b.WriteString(s)
			b.WriteString(strings.Repeat(" ", width[i]-utf8.RuneCountInString(s)))
			b.WriteString(" |")
		}
		fmt.Fprintln(w, b.String())
	}
	line(cells(head))
	sep := make([]string, 5)
	for i := range sep {
		sep[i] = strings.Repeat("-", width[i])
	}
	line(sep)
	for _, r := range t.Rows {
		line(cells(r))
	}
}

// WriteHeader prints what the numbers were measured on: the date, the Go
// version (as `go version` prints it), the CPU and the command.
func WriteHeader(w io.Writer, command string) {
	fmt.Fprintf(w, "date:    %s\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(w, "go:      go version %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(w, "cpu:     %s (%d logical CPUs, GOMAXPROCS %d)\n", cpuModel(), runtime.NumCPU(), runtime.GOMAXPROCS(0))
	fmt.Fprintf(w, "command: %s\n", command)
}

// cpuModel reads the CPU model name from /proc/cpuinfo ("unknown"
// elsewhere).
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// Formatting helpers for cells.

func fmtRatio(remote, base float64) string {
	if base <= 0 || remote < 0 {
		return ""
	}
	return fmt.Sprintf("%.2f×", remote/base)
}

func fmtBytes(b float64) string {
	switch {
	case b >= 10*1024:
		return fmt.Sprintf("%.1f KB", b/1024)
	case b >= 1024:
		return fmt.Sprintf("%.2f KB", b/1024)
	default:
		return fmt.Sprintf("%.0f B", b)
	}
}

func fmtDur(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= 10*time.Millisecond:
		return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	}
}

// verdict says whether a goal is met.
func verdict(goal string, met bool) string {
	if met {
		return goal + " (met)"
	}
	return goal + " (NOT met)"
}
