package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
)

func TestPrompts(t *testing.T) {
	srv := testkit.StartFixture(t, fixture.Options{})
	c := newCLI(t)
	c.ok("servers", "add", "fx", srv.URL())

	r := c.ok("prompts")
	if !strings.Contains(r.out, "COMMAND") || !strings.Contains(r.out, "/fx:greet  name=VALUE [style=VALUE]  Greets someone.") {
		t.Fatalf("prompts:\n%s", r.out)
	}
	var prompts []struct {
		Command   string `json:"command"`
		ServerID  string `json:"serverId"`
		Name      string `json:"name"`
		Arguments []struct {
			Name, Description string
			Required          bool
		} `json:"arguments"`
	}
	if err := json.Unmarshal([]byte(c.ok("prompts", "--json").out), &prompts); err != nil {
		t.Fatal(err)
	}
	if len(prompts) != 1 || prompts[0].Command != "/fx:greet" || prompts[0].ServerID != "fx" || len(prompts[0].Arguments) != 2 ||
		prompts[0].Arguments[0].Name != "name" || !prompts[0].Arguments[0].Required || prompts[0].Arguments[0].Description != "Who to greet." ||
		prompts[0].Arguments[1].Name != "style" || prompts[0].Arguments[1].Required {
		t.Fatalf("prompts --json: %+v", prompts)
	}

	if r = c.ok("prompt", "/fx:greet", "name=Ada"); r.out != "[user]\nPlease greet Ada.\n" {
		t.Fatalf("prompt: %s", r)
	}
	if r = c.ok("prompt", "fx:greet", "name=Ada", "style=formal"); r.out != "[user]\nPlease greet Ada in a formal style.\n" {
		t.Fatalf("prompt without the slash: %s", r)
	}
	r = c.ok("prompt", "/fx:greet", "name=Ada", "--json")
	var res struct {
		Command string `json:"command"`
		Blocks  []struct {
			Provenance struct{ Server, Kind, Name string } `json:"provenance"`
			Role       string                              `json:"role"`
			Text       string                              `json:"text"`
		} `json:"blocks"`
	}
	if err := json.Unmarshal([]byte(r.out), &res); err != nil {
		t.Fatal(err)
	}
	if res.Command != "/fx:greet" || len(res.Blocks) != 1 || res.Blocks[0].Role != "user" || res.Blocks[0].Text != "Please greet Ada." ||
		res.Blocks[0].Provenance.Server != "fx" || res.Blocks[0].Provenance.Kind != "prompt" || res.Blocks[0].Provenance.Name != "greet" {
		t.Fatalf("prompt --json: %s", r.out)
	}

	// Errors: every missing required argument is named before anything
	// is sent.
	r = c.fail(exitUsage, "/fx:greet: missing required argument(s): name (Who to greet.)", "prompt", "/fx:greet")
	if !strings.Contains(r.err, "usage: remotemcp prompt /fx:greet name=VALUE [style=VALUE]") {
		t.Fatalf("missing argument: %s", r)
	}
	c.fail(exitUsage, "missing required argument(s): name (Who to greet.); unknown argument(s): nme", "prompt", "/fx:greet", "nme=Ada")
	c.fail(exitUsage, `argument "Ada" must be NAME=VALUE`, "prompt", "/fx:greet", "Ada")
	c.fail(exitUsage, `argument "name" is given twice`, "prompt", "/fx:greet", "name=A", "name=B")
	c.fail(exitUsage, "want /SERVER:PROMPT", "prompt", "greet")
	c.fail(exitUsage, "usage: remotemcp prompt /SERVER:PROMPT", "prompt")
	c.fail(exitFail, "server fx has no prompt command /fx:nope (it has /fx:greet)", "prompt", "/fx:nope")
	c.fail(exitFail, `no server "nope"`, "prompt", "/nope:greet")

	c.ok("servers", "add", "down", deadURL(t))
	r = c.fail(exitFail, "error (network)", "prompt", "/down:greet", "name=x")
	if !strings.Contains(r.err, "what to do:") {
		t.Fatalf("prompt on a dead server: %s", r)
	}
	// One server down does not hide the others' prompts.
	r = c.run("", "prompts")
	if !strings.Contains(r.out, "/fx:greet") {
		t.Fatalf("prompts with a server down: %s", r)
	}
}

func TestResourcesAndRead(t *testing.T) {
	srv := testkit.StartFixture(t, fixture.Options{})
	c := newCLI(t)
	c.ok("servers", "add", "fx", srv.URL())

	r := c.ok("resources")
	for _, want := range []string{
		"@fx:test://readme      resource  readme  text/markdown",
		"@fx:test://logo.png    resource  logo    image/png",
		"@fx:test://items/{id}  template  item    text/plain",
	} {
		if !strings.Contains(r.out, want) {
			t.Errorf("resources lacks %q:\n%s", want, r.out)
		}
	}
	var rows []struct {
		ServerID string `json:"serverId"`
		URI      string `json:"uri"`
		Template bool   `json:"template"`
	}
	if err := json.Unmarshal([]byte(c.ok("resources", "--query", "LOGO", "--json").out), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].URI != fixture.LogoURI || rows[0].ServerID != "fx" {
		t.Fatalf("resources --query LOGO: %+v", rows)
	}
	// Ranked: the exact name "item" before URI substrings.
	if err := json.Unmarshal([]byte(c.ok("resources", "-q", "test://", "--json").out), &rows); err != nil || len(rows) != 3 {
		t.Fatalf("resources -q test://: %+v, %v", rows, err)
	}
	if err := json.Unmarshal([]byte(c.ok("resources", "-q", "item", "--json").out), &rows); err != nil || len(rows) != 1 || !rows[0].Template {
		t.Fatalf("resources -q item: %+v, %v", rows, err)
	}
	if r = c.ok("resources", "--query", "zzz"); r.out != "" || !strings.Contains(r.err, `no resource matches "zzz"`) {
		t.Fatalf("resources without a match: %s", r)
	}

	if r = c.ok("read", "@fx:test://readme"); r.out != fixture.ReadmeMarkdown {
		t.Fatalf("read readme: %q", r.out)
	}
	if r = c.ok("read", "@fx:test://items/7"); r.out != "item 7\n" {
		t.Fatalf("read a template's resource: %s", r)
	}
	// Binary content is summarised, never dumped.
	r = c.ok("read", "@fx:test://logo.png")
	want := fmt.Sprintf("[binary image/png, %d bytes] test://logo.png (not shown; use --json for the data)\n", len(fixture.LogoPNG()))
	if r.out != want || strings.Contains(r.out, "PNG") {
		t.Fatalf("read logo: %q, want %q", r.out, want)
	}
	var read struct {
		Mention string `json:"mention"`
		Blocks  []struct {
			Provenance struct{ Server, Kind, URI string } `json:"provenance"`
			MIMEType   string                             `json:"mimeType"`
			Data       []byte                             `json:"data"`
		} `json:"blocks"`
	}
	if err := json.Unmarshal([]byte(c.ok("read", "@fx:test://logo.png", "--json").out), &read); err != nil {
		t.Fatal(err)
	}
	if read.Mention != "@fx:test://logo.png" || len(read.Blocks) != 1 || string(read.Blocks[0].Data) != string(fixture.LogoPNG()) ||
		read.Blocks[0].Provenance.Kind != "resource" || read.Blocks[0].Provenance.URI != fixture.LogoURI {
		t.Fatalf("read --json: %+v", read)
	}

	c.fail(exitUsage, "is a URI template", "read", "@fx:test://items/{id}")
	c.fail(exitFail, "the server refused to read it", "read", "@fx:test://nothing")
	c.fail(exitUsage, "must look like @server:URI", "read", "fx")
	c.fail(exitFail, `no server "nope"`, "read", "@nope:test://readme")
	c.ok("servers", "add", "down", deadURL(t))
	c.fail(exitFail, "error (network)", "read", "@down:test://readme")
}
