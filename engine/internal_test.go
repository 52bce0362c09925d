package engine

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/remotemcp/remotemcp/elicit"
)

// TestCardFormKeepsSchemaOrder: a question's form lists its fields in the
// order of the schema's properties, not by name.
func TestCardFormKeepsSchemaOrder(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"age":{"type":"integer"},"city":{"type":"string"}}}`)
	f, err := elicit.DefaultLimits.ParseForm(schema)
	if err != nil {
		t.Fatal(err)
	}
	got := formOf(f, propertyOrder(schema))
	var names []string
	for _, fl := range got.Fields {
		names = append(names, fl.Name)
	}
	if !slices.Equal(names, []string{"name", "age", "city"}) {
		t.Fatalf("fields %v", names)
	}
	if o := propertyOrder(json.RawMessage(`not json`)); o != nil {
		t.Fatalf("order of garbage: %v", o)
	}
}

// TestCallbackPort: without a public redirect URI only loopback callbacks
// are the engine's; with one (a gateway's page, ServeCallbacksAt) that
// URI and nothing else, not even a loopback one.
func TestCallbackPort(t *testing.T) {
	var c Engine
	for redirect, want := range map[string]int{
		"http://127.0.0.1:7717/mcp-oauth":      7717,
		"http://[::1]:9000/mcp-oauth":          9000,
		"https://gw.example/mcp-oauth":         -1,
		"http://gw.example:7717/mcp-oauth":     -1,
		"http://127.0.0.1:7717/other":          -1,
		"https://127.0.0.1:7717/mcp-oauth":     -1,
		"http://127.0.0.1/mcp-oauth":           -1,
		"http://127.0.0.1:7717/mcp-oauth/../x": -1,
	} {
		port, err := c.callbackPort(redirect)
		if want < 0 && err == nil || want >= 0 && (err != nil || port != want) {
			t.Errorf("without a public URI: %q → %d, %v; want %d", redirect, port, err, want)
		}
	}
	const public = "https://gw.example/mcp-oauth"
	c.ServeCallbacksAt(public)
	if port, err := c.callbackPort(public); err != nil || port != 0 {
		t.Errorf("the public URI: %d, %v", port, err)
	}
	for _, redirect := range []string{"http://127.0.0.1:7717/mcp-oauth", "https://gw.example/other", "https://evil.example/mcp-oauth"} {
		if _, err := c.callbackPort(redirect); err == nil {
			t.Errorf("with a public URI: %q accepted", redirect)
		}
	}
	c.ServeCallbacksAt("")
	if port, err := c.callbackPort("http://127.0.0.1:7717/mcp-oauth"); err != nil || port != 7717 {
		t.Errorf("public URI unset: %d, %v", port, err)
	}
}
