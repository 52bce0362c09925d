package session

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fullStoredTool is a tool with an output schema and _meta, each kept as
// the server's bytes (members out of order).
func fullStoredTool(t testing.TB) Tool {
	t.Helper()
	in := json.RawMessage(`{"type":"object"}`)
	out := json.RawMessage(`{"type":"object","required":["z"],"properties":{"z":{"type":"string"},"a":{}}}`)
	meta := json.RawMessage(`{"z":1,"a":{"y":true,"b":null}}`)
	tool := &mcp.Tool{Name: "full", Title: "Full", Icons: []mcp.Icon{{Source: "https://x/i.png", Sizes: []string{"48x48"}}}}
	for raw, dst := range map[string]any{string(in): &tool.InputSchema, string(out): &tool.OutputSchema, string(meta): &tool.Meta} {
		if err := json.Unmarshal([]byte(raw), dst); err != nil {
			t.Fatal(err)
		}
	}
	return Tool{Tool: tool, RawInputSchema: in, RawOutputSchema: out, RawMeta: meta}
}

// Issue #19 item 4: a stored catalog gives back a tool's output schema
// and _meta as the server's bytes, and its icons; one stored before they
// were kept apart (inside the tool) still gives them.
func TestStoredCatalogKeepsWholeTools(t *testing.T) {
	want := fullStoredTool(t)
	b, err := EncodeCatalog(&Catalog{Tools: []Tool{want}}, "k")
	if err != nil {
		t.Fatal(err)
	}
	old := `{"v":1,"key":"k","tools":[{"tool":{"name":"full","title":"Full","icons":[{"src":"https://x/i.png","sizes":["48x48"]}],` +
		`"outputSchema":` + string(want.RawOutputSchema) + `,"_meta":` + string(want.RawMeta) + `},"inputSchema":{"type":"object"}}]}`
	for name, in := range map[string][]byte{"now": b, "before": []byte(old)} {
		c, err := DecodeCatalog(in, "k")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := c.Tools[0]
		if name == "now" && (string(got.RawOutputSchema) != string(want.RawOutputSchema) || string(got.RawMeta) != string(want.RawMeta)) {
			t.Errorf("%s: outputSchema %s, _meta %s; want the server's bytes %s, %s", name, got.RawOutputSchema, got.RawMeta, want.RawOutputSchema, want.RawMeta)
		}
		if !sameJSON(got.RawOutputSchema, want.OutputSchema) || !sameJSON(got.RawMeta, want.Meta) ||
			!sameJSON(got.RawOutputSchema, got.OutputSchema) || !sameJSON(got.RawMeta, got.Meta) {
			t.Errorf("%s: outputSchema %s, _meta %s", name, got.RawOutputSchema, got.RawMeta)
		}
		if got.Title != "Full" || len(got.Icons) != 1 || got.Icons[0].Sizes[0] != "48x48" {
			t.Errorf("%s: tool %+v", name, got.Tool)
		}
	}
}

// What the store hands back for the new parts is checked like a listing:
// an output schema that is not a JSON object is left out (the tool
// stays), a _meta or output schema that does not decode refuses the
// catalog.
func TestStoredCatalogMalformedParts(t *testing.T) {
	tool := func(extra string) string {
		return `{"v":1,"key":"k","tools":[{"tool":{"name":"a"},"inputSchema":{"type":"object"}` + extra + `}]}`
	}
	for name, tc := range map[string]struct {
		in     string
		refuse bool
	}{
		"output schema text":   {tool(`,"outputSchema":"x"`), false},
		"output schema list":   {tool(`,"outputSchema":[{}]`), false},
		"output schema inside": {`{"v":1,"key":"k","tools":[{"tool":{"name":"a","outputSchema":7},"inputSchema":{}}]}`, false},
		"output schema broken": {tool(`,"outputSchema":{"a":1e999}`), true},
		"meta text":            {tool(`,"_meta":"x"`), true},
		"meta list":            {tool(`,"_meta":[1]`), true},
	} {
		c, err := DecodeCatalog([]byte(tc.in), "k")
		if tc.refuse {
			if err == nil {
				t.Errorf("%s: no error", name)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got := c.Tools[0]; got.OutputSchema != nil || got.RawOutputSchema != nil {
			t.Errorf("%s: outputSchema %v (%s) kept", name, got.OutputSchema, got.RawOutputSchema)
		}
	}
}

// The capture keeps a tool's output schema and _meta as sent, beside its
// input schema.
func TestCaptureKeepsOutputSchemaAndMeta(t *testing.T) {
	body := `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"x","inputSchema":{"b":1},"outputSchema":{"z":{},"a":1},"_meta":{"q":2,"p":[1]}}]}}`
	sink := newRawToolSink()
	throughJSON(t, body, len(body), -1, sink)
	r, ok := sink.tool("x")
	if !ok || string(r.input) != `{"b":1}` || string(r.output) != `{"z":{},"a":1}` || string(r.meta) != `{"q":2,"p":[1]}` {
		t.Fatalf("captured %t: %s %s %s", ok, r.input, r.output, r.meta)
	}
}

// A listing's tool whose output schema is not a JSON object keeps the
// tool and loses the schema.
func TestDropBadOutputSchemas(t *testing.T) {
	tools := []*mcp.Tool{
		{Name: "obj", OutputSchema: map[string]any{"type": "object"}},
		{Name: "text", OutputSchema: "x"},
		{Name: "none"},
		{Name: "list", OutputSchema: []any{}},
	}
	got := dropBadOutputSchemas(tools)
	if strings.Join(got, ",") != "text,list" || tools[0].OutputSchema == nil || tools[1].OutputSchema != nil || tools[3].OutputSchema != nil {
		t.Errorf("dropped %v; tools %+v %+v %+v", got, tools[0], tools[1], tools[3])
	}
}
