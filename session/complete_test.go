package session

import (
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestBoundCompleteResult: a completion result keeps at most
// MaxCompletionValues values, drops over-long ones, and says it left
// some out.
func TestBoundCompleteResult(t *testing.T) {
	var many []string
	for i := range 150 {
		many = append(many, strconv.Itoa(i))
	}
	r := &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: many, Total: 150}}
	BoundCompleteResult(r)
	if len(r.Completion.Values) != MaxCompletionValues || r.Completion.Values[99] != "99" || !r.Completion.HasMore || r.Completion.Total != 150 {
		t.Errorf("150 values bounded to %d (last %q), hasMore %t, total %d", len(r.Completion.Values), r.Completion.Values[len(r.Completion.Values)-1], r.Completion.HasMore, r.Completion.Total)
	}

	long := strings.Repeat("x", MaxCompletionValueLen+1)
	r = &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{"a", long, "b"}, Total: -1}}
	BoundCompleteResult(r)
	if got := r.Completion.Values; len(got) != 2 || got[0] != "a" || got[1] != "b" || !r.Completion.HasMore || r.Completion.Total != 0 {
		t.Errorf("bounded = %+v", r.Completion)
	}

	r = &mcp.CompleteResult{}
	BoundCompleteResult(r)
	if r.Completion.Values == nil || r.Completion.HasMore {
		t.Errorf("empty result bounded to %+v", r.Completion)
	}
}
