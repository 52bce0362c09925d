// Package exit is the error that carries a CLI command's exit status
// (localapi's table: 2 for a mistake on the command line, 1 for a
// failure already explained), so that the packages a command is made of
// can say "usage error" without knowing how the process ends.
package exit

import (
	"fmt"

	"github.com/remotemcp/remotemcp/localapi"
)

// Error carries an exit status; a nil Err was reported already.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

// Unwrap returns the failure, so that errors.Is sees through the status.
func (e *Error) Unwrap() error { return e.Err }

// Reported is the error of a command that already explained its failure
// (exit status 1).
var Reported = &Error{Code: localapi.ExitFailed}

// Usagef is a mistake on the command line (exit status 2).
func Usagef(format string, args ...any) error {
	return &Error{Code: localapi.ExitUsage, Err: fmt.Errorf(format, args...)}
}
