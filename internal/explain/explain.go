// Package explain turns the CLI's failures into words for a person:
// remotemcp's own words first with the innermost cause, the library's
// chain of wrapped errors only with --verbose, the server's state and
// reason, and what to do next, in the words of localapi.Table (the
// settings page's come from there too).
package explain

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/remotemcp/remotemcp/internal/clitext"
	"github.com/remotemcp/remotemcp/internal/redact"
	"github.com/remotemcp/remotemcp/localapi"
)

// Failure prints a command's failure on w: "remotemcp: " and the words
// of err, what localapi.Error adds (Error), and the cut chain (Cause).
func Failure(w io.Writer, err error, verbose bool) {
	le, ok := localapi.AsError(err)
	if !ok {
		words, chain := err.Error(), ""
		if ce := (*CauseError)(nil); errors.As(err, &ce) {
			words, chain = ce.Split(words)
		}
		fmt.Fprintf(w, "remotemcp: %s\n", clitext.Cell(redact.Text(words)))
		Cause(w, chain, verbose)
		return
	}
	words, chain := SplitChain(err.Error(), le.Server)
	fmt.Fprintf(w, "remotemcp: %s\n", clitext.Cell(redact.Text(words)))
	Error(w, le)
	Cause(w, chain, verbose)
}

// Cause prints the library's chain of a failure with --verbose, and
// else says where it is.
func Cause(w io.Writer, chain string, verbose bool) {
	switch {
	case chain == "":
	case verbose:
		fmt.Fprintf(w, "  cause: %s\n", clitext.Cell(redact.Text(chain)))
	default:
		fmt.Fprintln(w, "  (run again with --verbose for the whole cause)")
	}
}

// SplitChain separates remotemcp's words in an engine error from the
// library's chain of wrapped errors (go-sdk's "calling …: sending …",
// net/http's "Post …: dial tcp …"), which the server's reason carries
// whole, after remotemcp's own words when it has some ("needs
// authorization: initialize: …"). The words keep the chain's innermost
// error ("connection refused"), which says what happened; chain is ""
// when there is none to hide.
func SplitChain(msg string, s *localapi.Server) (words, chain string) {
	if s == nil || s.Reason == nil {
		return msg, ""
	}
	for c := s.Reason.Message; IsChain(c); c = c[strings.Index(c, ": ")+2:] {
		if strings.Contains(msg, c) {
			return strings.Replace(msg, c, Innermost(c), 1), c
		}
	}
	return msg, ""
}

// IsChain reports whether msg is a chain of wrapped errors ("a: b: c"):
// a message of one or two parts is remotemcp's own sentence.
func IsChain(msg string) bool { return strings.Count(msg, ": ") >= 2 }

// Innermost returns a chain's innermost error, what follows its last
// ": " ("…: dial tcp …: connect: connection refused" → "connection
// refused").
func Innermost(chain string) string {
	if i := strings.LastIndex(chain, ": "); i >= 0 {
		return chain[i+2:]
	}
	return chain
}

// CauseError is remotemcp's words wrapping a library's chain of errors.
// Failure prints the words with the innermost cause, and the chain only
// with --verbose; Error is the whole message.
type CauseError struct {
	Words string
	Inner string // the innermost cause; "" for Innermost(Err.Error())
	Err   error
}

func (e *CauseError) Error() string { return e.Words + ": " + e.Err.Error() }

// Unwrap returns the library's error, so that errors.Is sees through the
// words.
func (e *CauseError) Unwrap() error { return e.Err }

// Split returns msg (an error wrapping e) with e's chain cut to its
// innermost cause, and the chain; chain is "" when nothing was cut.
func (e *CauseError) Split(msg string) (words, chain string) {
	chain = e.Err.Error()
	inner := e.Inner
	if inner == "" {
		inner = Innermost(chain)
	}
	if inner == chain || !strings.Contains(msg, chain) {
		return msg, ""
	}
	return strings.Replace(msg, chain, inner, 1), chain
}

// Error adds to an engine error the server's state and what the person
// can do, unless the message says it already.
func Error(w io.Writer, e *localapi.Error) {
	if s := e.Server; s != nil && s.Reason != nil {
		fmt.Fprintf(w, "  server %s: %s (%s)\n", clitext.Cell(s.ID), s.State, ReasonTag(*s.Reason))
	}
	if h := Hint(e); h != "" {
		if _, cmd, _ := strings.Cut(h, "\""); cmd == "" || !strings.Contains(e.Message, strings.SplitN(cmd, "\"", 2)[0]) {
			fmt.Fprintf(w, "  what to do: %s\n", h)
		}
	}
	if e.NotSent {
		fmt.Fprintln(w, "  nothing was sent to the server")
	}
}

// Hint says what the person can do about an engine error, from the
// error's code and the server's state and reason, in the words of
// localapi.Table (the page's come from there too).
func Hint(e *localapi.Error) string {
	t := localapi.Table
	if p := e.Permission; p != nil {
		return localapi.Fill(t.Reasons[localapi.ReasonPermission].CLI, map[string]string{"origin": p.Origin})
	}
	var s localapi.Server
	var r localapi.Reason
	if e.Server != nil {
		s = *e.Server
		if s.Reason != nil {
			r = *s.Reason
		}
	}
	vars := map[string]string{"id": s.ID, "url": clitext.Cell(redact.URL(s.URL))}
	switch {
	case e.Code == localapi.CodeLoginRequired || s.State == localapi.StateNeedsAuth:
		return localapi.Fill(t.States[localapi.StateNeedsAuth].CLI, vars)
	case e.Code == localapi.CodeNotFound || s.ID == "":
		return ""
	}
	if localapi.WordsCode(r) == localapi.ReasonPermission {
		return "" // without the origin, the advice cannot name it
	}
	w, _ := t.ReasonWords(r, string(s.Auth.Kind))
	return localapi.Fill(w.CLI, vars)
}
