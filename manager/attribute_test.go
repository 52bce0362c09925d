package manager

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/hostperm"
	"github.com/remotemcp/remotemcp/oauth"
	"github.com/remotemcp/remotemcp/session"
)

// R5.1: errors are attributed to the step that failed.
func TestAttribute(t *testing.T) {
	cases := []struct {
		name  string
		err   error
		class Class
		step  string
	}{
		{"timeout", fmt.Errorf("call: %w", context.DeadlineExceeded), ClassTimeout, ""},
		{"canceled", context.Canceled, ClassCanceled, ""},
		{"oauth step", fmt.Errorf("rejected: %w", &oauth.Error{Step: oauth.StepDiscoveryAS, ServerID: "a", Err: errors.New("no S256")}), ClassAuth, "discovery-AS"},
		{"permission", &hostperm.PermissionRequiredError{Origin: "https://x.example"}, ClassPermission, ""},
		{"http 503", &session.HTTPStatusError{StatusCode: 503}, ClassHTTP, ""},
		{"http 401", &session.HTTPStatusError{StatusCode: 401}, ClassAuth, "authorization"},
		{"session missing", fmt.Errorf("x: %w", mcp.ErrSessionMissing), ClassProtocol, ""},
		{"validation", fmt.Errorf("x: %w", session.ErrValidation), ClassProtocol, ""},
		{"limit", fmt.Errorf("list tools: %w", &session.LimitError{Server: "s", Limit: "maxListPages", Value: 100, What: "tools/list"}), ClassProtocol, ""},
		{"dial", &net.OpError{Op: "dial", Err: errors.New("connection refused")}, ClassNetwork, ""},
		{"config", &config.FieldError{Field: "url", Problem: "bad"}, ClassConfig, ""},
		{"disabled", ErrDisabled, ClassConfig, ""},
		{"tool disabled", ErrToolDisabled, ClassConfig, ""},
		{"other", errors.New("mystery"), ClassUnknown, ""},
	}
	for _, c := range cases {
		r := Attribute(c.err)
		if r.Class != c.class || r.Step != c.step {
			t.Errorf("%s: got %s/%q, want %s/%q", c.name, r.Class, r.Step, c.class, c.step)
		}
	}
}
