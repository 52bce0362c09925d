package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func storedFixture(t testing.TB) *Catalog {
	t.Helper()
	raw := json.RawMessage(`{"type":"object","$defs":{"p":{"type":"string"}},"properties":{"b":{"$ref":"#/$defs/p"},"a":{"type":"integer","description":"keep <these> bytes & order"}}}`)
	var schema any
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	tool := &mcp.Tool{Name: "t", Title: "T", Description: "d", InputSchema: schema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}
	return &Catalog{
		Tools:        []Tool{{Tool: tool, RawInputSchema: raw}},
		Prompts:      []*mcp.Prompt{{Name: "p", Arguments: []*mcp.PromptArgument{{Name: "x", Required: true}}}},
		Resources:    []*mcp.Resource{{URI: "test://r", Name: "r"}},
		Templates:    []*mcp.ResourceTemplate{{URITemplate: "test://i/{id}", Name: "i"}},
		Instructions: "use t",
	}
}

// Issue #12: a stored catalog comes back as it was, schema bytes and
// order included (R4.1), "<", ">" and "&" too (encoding/json's default
// writes them as \u003c…, so a host saw other bytes once the catalog had
// been stored than from the live session); under another key it is stale.
func TestStoredCatalogRoundTrip(t *testing.T) {
	c := storedFixture(t)
	b, err := EncodeCatalog(c, "k1")
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeCatalog(b, "k1")
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Tools[0].RawInputSchema) != string(c.Tools[0].RawInputSchema) {
		t.Errorf("schema bytes %s, want %s", got.Tools[0].RawInputSchema, c.Tools[0].RawInputSchema)
	}
	if got.Tools[0].Title != "T" || got.Tools[0].Annotations == nil || !got.Tools[0].Annotations.ReadOnlyHint {
		t.Errorf("tool %+v", got.Tools[0].Tool)
	}
	if got.Prompts[0].Arguments[0].Name != "x" || got.Resources[0].URI != "test://r" || got.Templates[0].URITemplate != "test://i/{id}" || got.Instructions != "use t" {
		t.Errorf("catalog %+v", got)
	}
	if _, err := DecodeCatalog(b, "k2"); !errors.Is(err, ErrStaleCatalog) {
		t.Errorf("another key: %v, want ErrStaleCatalog", err)
	}
}

// What the store hands back is checked like a server's listing (R2.10).
func TestStoredCatalogMalformed(t *testing.T) {
	for name, in := range map[string]string{
		"not json":          `{`,
		"wrong version":     `{"v":2,"key":"k"}`,
		"tool without name": `{"v":1,"key":"k","tools":[{"tool":{"name":""},"inputSchema":{"type":"object"}}]}`,
		"schema not object": `{"v":1,"key":"k","tools":[{"tool":{"name":"a"},"inputSchema":[1]}]}`,
		"twice the tool":    `{"v":1,"key":"k","tools":[{"tool":{"name":"a"},"inputSchema":{}},{"tool":{"name":"a"},"inputSchema":{}}]}`,
		"tool not object":   `{"v":1,"key":"k","tools":[{"tool":3,"inputSchema":{}}]}`,
		"null prompt":       `{"v":1,"key":"k","prompts":[null]}`,
		"resource no uri":   `{"v":1,"key":"k","resources":[{"name":"r"}]}`,
		"too big":           `{"v":1,"key":"k","instructions":"` + strings.Repeat("x", MaxStoredCatalog) + `"}`,
	} {
		if _, err := DecodeCatalog([]byte(in), "k"); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// FuzzDecodeCatalog: decoding never panics; what decodes validates and
// encodes again to the same catalog.
func FuzzDecodeCatalog(f *testing.F) {
	b, err := EncodeCatalog(storedFixture(f), "k")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"v":1,"key":"k","tools":[{"tool":{"name":"a"},"inputSchema":{"type":"object"}}]}`))
	f.Add([]byte(`{"v":1,"key":"k"}`))
	full, err := EncodeCatalog(&Catalog{Tools: []Tool{fullStoredTool(f)}}, "k")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(full)
	f.Add([]byte(`{"v":1,"key":"k","tools":[{"tool":{"name":"a","outputSchema":{"b":1},"_meta":{"c":2}},"inputSchema":{}}]}`))
	f.Add([]byte(`{"v":1,"key":"k","tools":[{"tool":{"name":"a"},"inputSchema":{},"outputSchema":"x","_meta":null}]}`))
	f.Add([]byte(`{"v":1,"key":"k","tools":[{"tool":{"name":"a"},"inputSchema":{},"outputSchema":{ "a" : 1 },"_meta":{ "b" : 2 }}]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := DecodeCatalog(in, "k")
		if err != nil {
			return
		}
		out, err := EncodeCatalog(c, "k")
		if err != nil {
			t.Fatalf("a decoded catalog does not encode: %v", err)
		}
		again, err := DecodeCatalog(out, "k")
		if err != nil {
			t.Fatalf("a re-encoded catalog does not decode: %v", err)
		}
		if len(again.Tools) != len(c.Tools) || len(again.Prompts) != len(c.Prompts) {
			t.Fatalf("round trip changed the catalog")
		}
		for i, tool := range c.Tools {
			a := again.Tools[i]
			// Storing compacts the bytes (encoding/json does); nothing else.
			if compact(a.RawOutputSchema) != compact(tool.RawOutputSchema) || compact(a.RawMeta) != compact(tool.RawMeta) {
				t.Fatalf("round trip changed tool %q: %s %s, then %s %s", tool.Name, tool.RawOutputSchema, tool.RawMeta, a.RawOutputSchema, a.RawMeta)
			}
			if (tool.RawOutputSchema == nil) != (tool.OutputSchema == nil) {
				t.Fatalf("tool %q: outputSchema %v, its bytes %s", tool.Name, tool.OutputSchema, tool.RawOutputSchema)
			}
		}
	})
}

// compact is raw without insignificant white space ("" for none).
func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}
