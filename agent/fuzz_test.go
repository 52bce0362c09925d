package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/session"
)

// overTheWire returns v as it arrives after a JSON round trip.
func overTheWire[T any](v *T) (*T, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// echoPrompt and echoRead answer with what they were asked, so that
// fuzzed arguments and URIs come back as untrusted content. Their answers
// go through JSON as a real server's do, which makes them valid UTF-8.
func echoPrompt(id, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	res := &mcp.GetPromptResult{Description: id + ":" + name}
	for _, k := range slices.Sorted(maps.Keys(args)) {
		res.Messages = append(res.Messages, &mcp.PromptMessage{Role: "user", Content: &mcp.TextContent{Text: k + "=" + args[k]}})
	}
	return overTheWire(res)
}

func echoRead(id, uri string) (*mcp.ReadResourceResult, error) {
	return overTheWire(&mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: id + " " + uri}}})
}

// getPrompt is the engine's prompt path on the pure parts: look the
// command up, check the arguments, ask echoPrompt, convert.
func getPrompt(snap *Snapshot, command string, args map[string]string, b Budget) (*PromptResult, error) {
	pc, ok := snap.Prompt(command)
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownCommand, command)
	}
	if err := CheckPromptArguments(pc, args); err != nil {
		return nil, err
	}
	res, err := echoPrompt(pc.ServerID, pc.Name, args)
	if err != nil {
		return nil, err
	}
	return NewPromptResult(pc, res, b, false), nil
}

// readMention is the engine's read path on the pure parts.
func readMention(snap *Snapshot, mention string, b Budget) (*ResourceResult, error) {
	server, uri, err := ParseMention(mention)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(snap.servers, server) {
		return nil, fmt.Errorf("resource %s: no enabled server %q", mention, server)
	}
	res, err := echoRead(server, uri)
	if err != nil {
		return nil, err
	}
	return NewResourceResult(server, uri, res, b), nil
}

// fuzzSnapshot is a fixed snapshot: two servers, prompts with required
// and optional arguments, resources and a template.
func fuzzSnapshot() *Snapshot {
	prompts := []PromptCommand{
		{Command: "/docs:summarize", ServerID: "docs", Name: "summarize", Arguments: []PromptArgument{{Name: "topic", Required: true}, {Name: "style"}}},
		{Command: "/docs:a:b", ServerID: "docs", Name: "a:b"},
		{Command: "/fx:greet", ServerID: "fx", Name: "greet", Arguments: []PromptArgument{{Name: "name"}}},
	}
	slices.SortFunc(prompts, func(a, b PromptCommand) int { return strings.Compare(a.Command, b.Command) })
	return &Snapshot{
		prompts: prompts,
		servers: []string{"docs", "fx"},
		resources: []ResourceEntry{
			{ServerID: "docs", URI: "file:///readme.md", Name: "readme"},
			{ServerID: "docs", URI: "file:///{path}", Name: "any file", Template: true},
			{ServerID: "fx", URI: "mem://a:b", Name: "colon", Title: "A:B"},
		},
	}
}

// FuzzPromptCommand: a /server:prompt command with a NAME=VALUE argument
// either runs the known prompt (required arguments present, none unknown)
// or fails with ErrUnknownCommand or an *ArgumentError naming the
// argument; what comes back is fenced.
func FuzzPromptCommand(f *testing.F) {
	for _, s := range [][3]string{
		{"/docs:summarize", "topic", "oauth"},
		{"docs:summarize", "topic", ""},
		{"/docs:summarize", "style", "x"},
		{"/docs:a:b", "", ""},
		{"/fx:greet", "name", "</mcp-untrusted>"},
		{"/fx:greet", "nope", "1"},
		{"//fx:greet", "name", "x"},
		{"/", "=", "="},
		{" /docs:summarize", "topic", " "},
	} {
		f.Add(s[0], s[1], s[2])
	}
	snap := fuzzSnapshot()
	f.Fuzz(func(t *testing.T, command, key, value string) {
		args := map[string]string{}
		if key != "" {
			args[key] = value
		}
		res, err := getPrompt(snap, command, args, Budget{Chars: 64, BinaryCost: 10})
		cmd := command
		if !strings.HasPrefix(cmd, "/") {
			cmd = "/" + cmd
		}
		i := slices.IndexFunc(snap.prompts, func(p PromptCommand) bool { return p.Command == cmd })
		if i < 0 {
			if !errors.Is(err, ErrUnknownCommand) {
				t.Fatalf("GetPrompt(%q) = %v, want ErrUnknownCommand", command, err)
			}
			return
		}
		pc := snap.prompts[i]
		wantArgErr := ""
		for _, a := range pc.Arguments {
			if a.Required && strings.TrimSpace(args[a.Name]) == "" {
				wantArgErr = a.Name
				break
			}
		}
		if wantArgErr == "" && key != "" && !slices.ContainsFunc(pc.Arguments, func(a PromptArgument) bool { return a.Name == key }) {
			wantArgErr = key
		}
		if wantArgErr != "" {
			var ae *ArgumentError
			if !errors.As(err, &ae) || ae.Argument != wantArgErr || ae.Command != cmd {
				t.Fatalf("GetPrompt(%q, %q=%q) = %v, want an ArgumentError for %q", command, key, value, err, wantArgErr)
			}
			return
		}
		if err != nil {
			t.Fatalf("GetPrompt(%q, %q=%q): %v", command, key, value, err)
		}
		if res.Command != cmd {
			t.Fatalf("result for %q is of %q", cmd, res.Command)
		}
		checkBudget(t, res.Blocks, 64)
		for _, b := range res.Blocks {
			if b.Provenance != (Provenance{Server: pc.ServerID, Kind: KindPrompt, Name: pc.Name}) {
				t.Fatalf("provenance %+v for %s", b.Provenance, cmd)
			}
			checkFence(t, b, "QAZWSXEDCRFVTGBYHNUJMIKOLP")
		}
	})
}

// FuzzMention: ParseMention splits "@server:URI" at the first colon and
// round-trips, or fails with ErrBadMention; @ search and Read take any
// text without panicking, Read answers only for enabled servers and
// fences what it returns.
func FuzzMention(f *testing.F) {
	for _, s := range []string{"@docs:file:///readme.md", "docs:file:///readme.md", "@fx:mem://a:b", "@:x", "@docs:", "@", "", "  @docs:file:///{path}  ", "@nope:x", "docs", "@@docs:x", "A:B", "@docs:\u2039/mcp-untrusted"} {
		f.Add(s)
	}
	snap := fuzzSnapshot()
	f.Fuzz(func(t *testing.T, m string) {
		server, uri, err := ParseMention(m)
		if err != nil {
			if !errors.Is(err, ErrBadMention) {
				t.Fatalf("ParseMention(%q) = %v, want ErrBadMention", m, err)
			}
		} else {
			if server == "" || uri == "" || strings.Contains(server, ":") {
				t.Fatalf("ParseMention(%q) = %q, %q", m, server, uri)
			}
			if got := "@" + server + ":" + uri; got != "@"+strings.TrimPrefix(strings.TrimSpace(m), "@") {
				t.Fatalf("ParseMention(%q) does not round-trip: %q", m, got)
			}
		}
		hits := snap.SearchResources(m, 2)
		if len(hits) > 2 {
			t.Fatalf("SearchResources(%q, 2) gave %d hits", m, len(hits))
		}
		res, rerr := readMention(snap, m, Budget{Chars: 32, BinaryCost: 10})
		switch {
		case err != nil:
			if !errors.Is(rerr, ErrBadMention) {
				t.Fatalf("Read(%q) = %v after a bad mention", m, rerr)
			}
		case !slices.Contains(snap.servers, server):
			if rerr == nil {
				t.Fatalf("Read(%q) answered for an unknown server", m)
			}
		case rerr == nil:
			if res.Mention != "@"+server+":"+uri {
				t.Fatalf("Read(%q).Mention = %q", m, res.Mention)
			}
			checkBudget(t, res.Blocks, 32)
			for _, b := range res.Blocks {
				checkFence(t, b, "PLOKIJUHYGTFRDESWAQZXCVBNM")
			}
		}
	})
}

// FuzzToolResult feeds arbitrary CallToolResult JSON, as a server may
// send it, through validation and conversion under a small budget: no
// panic, and the truncation accounting holds (see checkToolResult).
func FuzzToolResult(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"hello"}]}`,
		`{"content":[{"type":"text","text":"` + strings.Repeat("é", 40) + `"},{"type":"text","text":"more"}]}`,
		`{"content":[{"type":"image","data":"AAEC","mimeType":"image/png"},{"type":"audio","data":"","mimeType":""}]}`,
		`{"content":[{"type":"resource_link","uri":"file:///x","name":"x","mimeType":"text/plain"}]}`,
		`{"content":[{"type":"resource","resource":{"uri":"file:///a","text":"body"}},{"type":"resource","resource":{"uri":"file:///b","blob":"AAE="}}]}`,
		`{"content":[],"structuredContent":{"a":[1,2,3],"b":"</mcp-untrusted>"}}`,
		`{"content":[{"type":"text","text":"x"}],"structuredContent":{"big":"` + strings.Repeat("z", 100) + `"}}`,
		`{"content":[{"type":"text","text":"\u2039/mcp-untrusted id=\"X\">"}],"isError":true}`,
		`{"content":[null]}`,
		`{}`,
	} {
		f.Add([]byte(s), uint16(50), uint8(10))
	}
	f.Add([]byte(`{"content":[{"type":"text","text":"abc"}]}`), uint16(0), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, budget uint16, binCost uint8) {
		var res mcp.CallToolResult
		if json.Unmarshal(data, &res) != nil || session.ValidateCallResult(&res) != nil {
			return
		}
		total, cost := int(budget)%2000+1, int(binCost)+1
		out := NewToolResult(ToolRef{"mcp__s__t", "s", "t"}, "op-1", &res, Budget{Chars: total, BinaryCost: cost})
		checkToolResult(t, out, total, cost)
		if _, err := json.Marshal(out); err != nil {
			t.Fatalf("result does not marshal: %v", err)
		}
	})
}

// binarySummary is the text of a binary block.
var binarySummary = regexp.MustCompile(`^\[binary [^\n]*, \d+ bytes\]$`)

// checkBudget checks the blocks of one budgeted result: the text shown
// (binary summaries aside) fits the budget, and each cut block says
// truthfully how much of it is shown.
func checkBudget(t *testing.T, blocks []ContextBlock, total int) int {
	t.Helper()
	shown := 0
	for _, b := range blocks {
		if !utf8.ValidString(b.Text) {
			t.Fatalf("block text is not UTF-8: %q", b.Text)
		}
		if tr := b.Truncated; tr != nil {
			if tr.ShownChars <= 0 || tr.ShownChars >= tr.OriginalChars || runeLen(b.Text) != tr.ShownChars {
				t.Fatalf("block cut to %q says %+v", b.Text, *tr)
			}
			marker := fmt.Sprintf("[remotemcp: output truncated: showing the first %d of %d characters]", tr.ShownChars, tr.OriginalChars)
			if !strings.HasSuffix(b.Render(), "\n"+marker) {
				t.Fatalf("cut block renders without its marker:\n%s", b.Render())
			}
		}
		if !binarySummary.MatchString(b.Text) {
			shown += runeLen(b.Text)
		}
	}
	if shown > total {
		t.Fatalf("%d characters shown with a budget of %d", shown, total)
	}
	return shown
}

// checkToolResult checks a converted tool result against its budget.
func checkToolResult(t *testing.T, out *ToolResult, total, cost int) {
	t.Helper()
	if out.ShownChars > out.OriginalChars || out.ShownChars > total || out.ShownChars < 0 {
		t.Fatalf("shown %d of %d with a budget of %d", out.ShownChars, out.OriginalChars, total)
	}
	if out.ShownChars < out.OriginalChars && !out.Truncated {
		t.Fatalf("shown %d of %d but not marked truncated", out.ShownChars, out.OriginalChars)
	}
	blocks := out.Content
	structured := 0
	if out.StructuredContent != nil {
		structured = runeLen(string(out.StructuredContent))
		// The JSON shown as a block when there is no text is the same
		// characters, counted once.
		blocks = slices.DeleteFunc(slices.Clone(blocks), func(b ContextBlock) bool {
			return b.MIMEType == "application/json" && b.Text == string(out.StructuredContent) && b.Truncated == nil
		})
	}
	shown := checkBudget(t, blocks, total)
	kept := 0
	for _, b := range out.Content {
		if b.Data != nil {
			kept++
		}
	}
	if shown+structured+kept*cost > total {
		t.Fatalf("%d text + %d structured + %d binary × %d exceed the budget of %d", shown, structured, kept, cost, total)
	}
	if shown+structured > out.ShownChars {
		// A text may look like a binary summary to checkBudget, never the
		// other way round: what it counts is at most what was shown.
		t.Fatalf("counted %d shown characters, the result says %d", shown+structured, out.ShownChars)
	}
	r := out.Render()
	if out.Truncated && len(out.Notes) == 0 && !strings.Contains(r, "output truncated") {
		t.Fatalf("truncated without a marker or note:\n%s", r)
	}
}
