package agent

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
)

// R4.2: prompts become /server:prompt commands with their argument form;
// the output is an untrusted, fenced block.
func TestR4_2_Prompts(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	e := newEnv(t, envOpts{servers: []config.Server{srvCfg("fx", f.URL())}})
	var greet *PromptCommand
	for _, p := range e.reg.Snapshot().Prompts() {
		if p.Command == "/fx:greet" {
			greet = &p
		}
	}
	if greet == nil {
		t.Fatalf("no /fx:greet in %+v", e.reg.Snapshot().Prompts())
	}
	wantArgs := []PromptArgument{{Name: "name", Description: "Who to greet.", Required: true}, {Name: "style", Description: "Greeting style, e.g. formal."}}
	if !reflect.DeepEqual(greet.Arguments, wantArgs) {
		t.Fatalf("arguments = %+v", greet.Arguments)
	}
	_, err := e.reg.GetPrompt(testkit.Context(t), "/fx:greet", map[string]string{"style": "formal"})
	var ae *ArgumentError
	if !errors.As(err, &ae) || ae.Argument != "name" {
		t.Fatalf("missing required argument: %v", err)
	}
	if _, err := e.reg.GetPrompt(testkit.Context(t), "/fx:greet", map[string]string{"name": "A", "tone": "x"}); !errors.As(err, &ae) || ae.Argument != "tone" {
		t.Fatalf("unknown argument: %v", err)
	}
	if _, err := e.reg.GetPrompt(testkit.Context(t), "/fx:nope", nil); !errors.Is(err, ErrUnknownCommand) {
		t.Fatalf("unknown command: %v", err)
	}
	res, err := e.reg.GetPrompt(testkit.Context(t), "fx:greet", map[string]string{"name": "Ada", "style": "formal"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Blocks) != 1 {
		t.Fatalf("blocks = %+v", res.Blocks)
	}
	b := res.Blocks[0]
	if b.Text != "Please greet Ada in a formal style." || b.Provenance != (Provenance{Server: "fx", Kind: KindPrompt, Name: "greet"}) || b.Role != "user" {
		t.Fatalf("block = %+v", b)
	}
	r := res.Render()
	if !strings.HasPrefix(r, "<mcp-untrusted id=\""+b.fence+"\" server=\"fx\" kind=\"prompt\" name=\"greet\"") || !strings.HasSuffix(r, "</mcp-untrusted id=\""+b.fence+"\">") {
		t.Fatalf("render = %s", r)
	}
}

// R4.3: @ search over resources and templates, ranked; reads give fenced
// blocks with provenance and MIME type; binary is summarised.
func TestR4_3_Resources(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	f.AddResource("test://readme-extra")
	e := newEnv(t, envOpts{servers: []config.Server{srvCfg("fx", f.URL())}})

	got := e.reg.SearchResources("@readme", 0)
	if len(got) < 2 || got[0].URI != fixture.ReadmeURI || got[1].URI != "test://readme-extra" {
		t.Fatalf("search readme = %+v", got)
	}
	if got := e.reg.SearchResources("fx:item", 0); len(got) != 1 || !got[0].Template || got[0].Mention() != "@fx:test://items/{id}" {
		t.Fatalf("search templates = %+v", got)
	}
	if got := e.reg.SearchResources("", 2); len(got) != 2 {
		t.Fatalf("limit: %d entries", len(got))
	}

	res, err := e.reg.Read(testkit.Context(t), "@fx:"+fixture.ReadmeURI)
	if err != nil || len(res.Blocks) != 1 {
		t.Fatalf("read readme = %+v, %v", res, err)
	}
	b := res.Blocks[0]
	if b.Text != fixture.ReadmeMarkdown || b.MIMEType != "text/markdown" || b.Provenance != (Provenance{Server: "fx", Kind: KindResource, URI: fixture.ReadmeURI}) {
		t.Fatalf("readme block = %+v", b)
	}
	if r := res.Render(); !strings.Contains(r, `uri="test://readme"`) || !strings.Contains(r, `mime="text/markdown"`) {
		t.Fatalf("render = %s", r)
	}

	res, err = e.reg.Read(testkit.Context(t), "@fx:"+fixture.LogoURI)
	if err != nil || len(res.Blocks) != 1 {
		t.Fatalf("read logo = %+v, %v", res, err)
	}
	want := fmt.Sprintf("[binary image/png, %d bytes]", len(fixture.LogoPNG()))
	if b := res.Blocks[0]; b.Text != want || !reflect.DeepEqual(b.Data, fixture.LogoPNG()) || strings.Contains(res.Render(), "\x89PNG") {
		t.Fatalf("logo block text %q (want %q), %d data bytes", b.Text, want, len(b.Data))
	}

	res, err = e.reg.Read(testkit.Context(t), "fx:test://items/7")
	if err != nil || res.Blocks[0].Text != "item 7" {
		t.Fatalf("read template instance = %+v, %v", res, err)
	}
	if _, err := e.reg.Read(testkit.Context(t), "@fx:test://items/{id}"); err == nil {
		t.Fatal("reading an unfilled template was allowed")
	}
	for _, bad := range []string{"@fx", "@:x", "readme"} {
		if _, err := e.reg.Read(testkit.Context(t), bad); !errors.Is(err, ErrBadMention) {
			t.Errorf("Read(%q) = %v, want ErrBadMention", bad, err)
		}
	}
	if _, err := e.reg.Read(testkit.Context(t), "@other:test://readme"); err == nil {
		t.Fatal("read from an unknown server")
	}
}

func TestSearchRanking(t *testing.T) {
	r := &Registry{}
	entries := []ResourceEntry{
		{ServerID: "a", URI: "file:///docs/notes", Name: "misc"},     // URI substring
		{ServerID: "a", URI: "notes://1", Name: "x"},                 // URI prefix
		{ServerID: "a", URI: "file:///a", Name: "my notes"},          // name substring
		{ServerID: "b", URI: "file:///b", Name: "notes-2026"},        // name prefix
		{ServerID: "a", URI: "file:///c", Name: "z", Title: "Notes"}, // title exact
		{ServerID: "a", URI: "file:///d", Name: "notes"},             // name exact
		{ServerID: "a", URI: "notes", Name: "y"},                     // URI exact
		{ServerID: "a", URI: "file:///e", Name: "other"},             // no match
	}
	r.snap.Store(&Snapshot{resources: entries, servers: []string{"a", "b"}})
	var got []string
	for _, e := range r.SearchResources("NOTES", 0) {
		got = append(got, e.Name)
	}
	want := []string{"notes", "z", "y", "notes-2026", "x", "my notes", "misc"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ranking = %q, want %q", got, want)
	}
	if got := r.SearchResources("b:notes", 0); len(got) != 1 || got[0].ServerID != "b" {
		t.Fatalf("server filter = %+v", got)
	}
}

// Issue #11 item 7: a connected server's instructions reach the agent as
// a fenced block of kind instructions; a closer inside them stays inert.
func TestInstructionsFenced(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	e := newEnv(t, envOpts{servers: []config.Server{srvCfg("fx", f.URL())}})
	if _, err := e.call(t, "mcp__fx__echo", `{"text":"hi"}`, CallOptions{}); err != nil {
		t.Fatal(err)
	}
	blocks := e.reg.Instructions(e.ctx)
	if len(blocks) != 1 || blocks[0].Provenance.Server != "fx" || blocks[0].Provenance.Kind != KindInstructions {
		t.Fatalf("instructions: %+v", blocks)
	}
	out := blocks[0].Render()
	if strings.Count(out, "</mcp-untrusted") != 1 || !strings.Contains(out, "Use echo to repeat text.") {
		t.Fatalf("rendered instructions:\n%s", out)
	}
}
