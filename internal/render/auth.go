package render

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/remotemcp/remotemcp/internal/clitext"
	"github.com/remotemcp/remotemcp/internal/explain"
	"github.com/remotemcp/remotemcp/localapi"
)

// Login prints on w (stderr) what a finished sign-in to server id
// achieved, or returns why it failed.
func Login(w io.Writer, id string, f *localapi.AuthFlow) error {
	switch {
	case f.Phase == localapi.PhaseFailed:
		msg := fmt.Sprintf("sign-in to %s failed", id)
		if f.Step != "" {
			msg += " at step " + f.Step
		}
		msg += ": " + strings.TrimSpace(f.Error)
		if p := f.Permission; p != nil {
			msg += fmt.Sprintf(" (allow it with \"remotemcp grants approve %s\", then sign in again)", p.Origin)
		}
		return errors.New(msg)
	case f.Phase != localapi.PhaseDone:
		return fmt.Errorf("sign-in to %s: unexpected phase %q", id, f.Phase)
	case f.Result == nil || f.Result.NotNeeded:
		fmt.Fprintf(w, "%s answered without authorization; no sign-in needed\n", id)
	default:
		r := f.Result
		how, refresh := "configured client", "no refresh token (you will sign in again when the access token expires)"
		if r.Registered {
			how = "registered client"
		}
		if r.RefreshToken {
			refresh = "refresh token stored sealed"
		}
		issuer := "-"
		if r.Binding != nil {
			issuer = r.Binding.Issuer
		}
		fmt.Fprintf(w, "signed in: issuer %s, %s, scopes [%s], %s\n", issuer, how, strings.Join(r.Scopes, " "), refresh)
	}
	return nil
}

// LoginTimeout is the error of a login to server id whose browser never
// came back after timeout: it says what to try, which depends on how the
// client was obtained (st, the server's sign-in state, nil when unknown):
// an authorization server that forgot a registered client never
// redirects back, and the next login registers a new one (issue #11).
func LoginTimeout(id string, timeout time.Duration, st *localapi.AuthStatus) error {
	msg := fmt.Sprintf("sign-in to %s timed out after %s: the browser never came back to remotemcp", id, timeout)
	switch {
	case st != nil && st.Registered:
		msg += fmt.Sprintf(`. If the authorization page showed an error such as "invalid_client" or "unknown client", the authorization server has forgotten remotemcp's client registration (it restarted): run "remotemcp auth login %s" again, which registers a new client (--reregister forces that). Otherwise run it again and finish in the browser within --timeout`, id)
	case st != nil && st.ClientID != "":
		msg += fmt.Sprintf(`. If the authorization page showed an error such as "invalid_client", the authorization server does not know the configured client id: check it with "remotemcp servers show %s". Otherwise run "remotemcp auth login %s" again and finish in the browser within --timeout`, id, id)
	default:
		msg += fmt.Sprintf(`; run "remotemcp auth login %s" again and finish in the browser within --timeout (if the authorization page showed an error, the next login registers a new client)`, id)
	}
	return errors.New(msg)
}

// Logout prints what "auth logout" forgot.
func Logout(w io.Writer, res *localapi.LogoutResult) error {
	if len(res.Forgotten) == 0 {
		_, err := fmt.Fprintf(w, "signed out of %s: there was nothing to forget\n", res.ServerID)
		return err
	}
	_, err := fmt.Fprintf(w, "signed out of %s: forgot %s\n", res.ServerID, strings.Join(res.Forgotten, ", "))
	return err
}

// AuthStatuses prints each server's sign-in state on w, a blank line
// between two; without verbose a problem's chain is cut to its innermost
// error, and errw says where the whole one is.
func AuthStatuses(w, errw io.Writer, list []localapi.AuthStatus, verbose bool) {
	cut := false
	for i, st := range list {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if !verbose && explain.IsChain(st.Problem) {
			st.Problem = explain.Innermost(st.Problem)
			cut = true
		}
		authStatus(w, st)
	}
	if cut {
		fmt.Fprintln(errw, "(run again with --verbose for the whole problem)")
	}
}

// authStatus prints one server's sign-in state as "key: value" lines.
func authStatus(w io.Writer, st localapi.AuthStatus) {
	if st.Kind != "oauth" && st.Kind != "auto" {
		clitext.WriteKV(w, "server", st.ServerID, "auth", string(st.Kind))
		return
	}
	signedIn := clitext.YesNo(st.SignedIn)
	if !st.SignedIn {
		signedIn += fmt.Sprintf(" (run \"remotemcp auth login %s\")", st.ServerID)
	}
	var issuer, resource, current, client, access string
	if b := st.Binding; b != nil {
		issuer, resource = b.Issuer, b.Resource
		if !st.BindingCurrent {
			current = "no: the server's URL changed since; sign in again"
		}
	}
	if st.ClientID != "" {
		client = st.ClientID + " (configured)"
		if st.Registered {
			client = st.ClientID + " (registered)"
		}
	}
	if access = clitext.YesNo(st.HasAccessToken); st.AccessTokenExpiry != nil {
		access += ", expires " + st.AccessTokenExpiry.Format(time.RFC3339)
	}
	clitext.WriteKV(w, "server", st.ServerID, "auth", string(st.Kind), "signed in", signedIn, "issuer", issuer,
		"resource", resource, "binding current", current, "client id", client, "access token", access,
		"refresh token", clitext.YesNo(st.HasRefreshToken), "scopes", strings.Join(st.Scopes, " "), "problem", st.Problem)
}
