package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/elicit"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/manager"
)

// Issue #20 item 3, review findings 4 and 5: a card's header line shows
// the tool's name with its invisible characters as [U+XXXX] (a
// right-to-left override in the name reordered the line), and the page's
// set of invisible characters holds the variation selectors, the
// Mongolian free variation selectors and the braille blank, as
// visible.Hidden does, while an emoji's selector 16 and joiner stay.
func TestBrowserCardShowsHiddenInNames(t *testing.T) {
	s := newStack(t, stackOpts{})
	b := newBrowser(t)
	b.login(s)
	ctx, cancel := context.WithCancel(testkit.Context(t))
	defer cancel()

	const tool = "read\u202Eelif"
	adm, err := s.eng.Elicit.Admit(ctx, elicit.CallInfo{ServerID: "fx", Tool: tool, OperationID: "op-n", Arguments: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Finish()
	done := make(chan error, 1)
	go func() {
		r, err := s.eng.Elicit.Handle(ctx, manager.ElicitInfo{ServerID: "fx", OperationID: "op-n"},
			&mcp.ElicitRequest{Params: &mcp.ElicitParams{Message: "pick\uFE00 one\u2800\u180B\U000E0100 \u2764\uFE0F \U0001F3F3\uFE0F\u200D\U0001F308",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}}}})
		if err == nil && (r == nil || r.Action != "decline") {
			err = errDeclineExpected
		}
		done <- err
	}()
	const card = `#cards .card:has(.asker.server)`
	b.wait("the card", `document.querySelector('`+card+`')`)
	meta := b.eval(`document.querySelector('` + card + ` .meta').textContent`)
	if !strings.HasPrefix(meta, "fx · tool read[U+202E]elif · ") || strings.ContainsRune(meta, '\u202E') {
		t.Errorf("the card's header line: %q", meta)
	}
	q := b.eval(`document.querySelector('` + card + ` blockquote').textContent`)
	if want := "pick[U+FE00] one[U+2800][U+180B][U+E0100] \u2764\uFE0F \U0001F3F3\uFE0F\u200D\U0001F308"; q != want {
		t.Errorf("the question: %q, want %q", q, want)
	}
	b.click(card + ` button[data-answer=decline]`)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute): // only a hang
		t.Fatal("the card was not answered")
	}
	b.checkConsole()
}

var errDeclineExpected = errors.New("the card's answer is not decline")
