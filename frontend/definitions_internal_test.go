package frontend

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestHostDefinitionParts: each part of a definition that the front end
// parses (issue #19 item 4) is offered when it is well formed and left
// out (false) when not.
func TestHostDefinitionParts(t *testing.T) {
	for _, tc := range []struct {
		part, in string
		ok       bool
		want     string // the part as the host gets it (JSON), "" for none
	}{
		{"outputSchema", ``, true, ""},
		{"outputSchema", `{"type":"object","properties":{"b":{},"a":{}}}`, true, `{"type":"object","properties":{"b":{},"a":{}}}`},
		{"outputSchema", `{"properties":{"n":{}}}`, true, `{"type":"object","properties":{"n":{}}}`},
		{"outputSchema", `{"type":"array"}`, false, ""},
		{"outputSchema", `"x"`, false, ""},
		{"outputSchema", `null`, false, ""},
		{"icons", ``, true, ""},
		{"icons", `[{"src":"https://x/i.png","mimeType":"image/png","sizes":["48x48"],"theme":"dark"}]`, true, `[{"src":"https://x/i.png","mimeType":"image/png","sizes":["48x48"],"theme":"dark"}]`},
		{"icons", `{"src":"x"}`, false, ""},
		{"icons", `[{"src":1}]`, false, ""},
		{"_meta", ``, true, ""},
		{"_meta", `null`, true, ""},
		{"_meta", `{"n":12345678901234567890,"a":{"z":1,"b":2}}`, true, `{"a":{"z":1,"b":2},"n":12345678901234567890}`},
		{"_meta", `[1]`, false, ""},
		{"_meta", `{"a":`, false, ""},
		{"annotations", `{"audience":["user"],"priority":0.5,"lastModified":"2025-01-12T15:00:58Z"}`, true, `{"audience":["user"],"lastModified":"2025-01-12T15:00:58Z","priority":0.5}`},
		{"annotations", `null`, true, ""},
		{"annotations", `{"priority":"high"}`, false, ""},
		{"trusted tool annotations", `{"title":"T","readOnlyHint":true,"destructiveHint":false}`, true, `{"destructiveHint":false,"idempotentHint":false,"readOnlyHint":true,"title":"T"}`},
		{"untrusted tool annotations", `{"title":"T","readOnlyHint":true,"destructiveHint":false}`, true, `{"idempotentHint":false,"readOnlyHint":false,"title":"T"}`},
		{"untrusted tool annotations", `{"readOnlyHint":true}`, true, ""},
		{"untrusted tool annotations", `{"readOnlyHint":"yes"}`, false, ""},
	} {
		got, ok := hostPart(tc.part, json.RawMessage(tc.in))
		if ok != tc.ok || got != tc.want {
			t.Errorf("%s %s: %s, %t; want %s, %t", tc.part, tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// hostPart runs the parser of one part and encodes what the host gets.
func hostPart(part string, raw json.RawMessage) (string, bool) {
	var v any
	var ok bool
	switch part {
	case "outputSchema":
		var s json.RawMessage
		if s, ok = hostOutputSchema(raw); s != nil {
			v = s
		}
	case "icons":
		var is []mcp.Icon
		if is, ok = hostIcons(raw); is != nil {
			v = is
		}
	case "_meta":
		var m mcp.Meta
		if m, ok = hostMeta(raw); m != nil {
			v = m
		}
	case "annotations":
		var a *mcp.Annotations
		if a, ok = hostAnnotations(raw); a != nil {
			v = a
		}
	case "trusted tool annotations", "untrusted tool annotations":
		var a *mcp.ToolAnnotations
		if a, ok = hostToolAnnotations(raw, part == "trusted tool annotations"); a != nil {
			v = a
		}
	}
	if v == nil {
		return "", ok
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "marshal: " + err.Error(), ok
	}
	return string(b), ok
}

// Whatever a server (or a stored catalog, or the daemon) hands the front
// end as the parts of a definition, the parsers never panic, and what
// they offer go-sdk's server takes and encodes: an output schema is an
// object schema, _meta an object.
func FuzzHostDefinitionParts(f *testing.F) {
	for _, s := range []string{``, `null`, `{}`, `{"type":"object"}`, `{"type":"array"}`, `[{"src":"x"}]`, `{"a":1e999}`,
		`{"audience":["user"],"priority":1}`, `{"title":"t","readOnlyHint":true}`, `"x"`, `[1,2]`, `{"a":`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		raw := json.RawMessage(in)
		tool := &mcp.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)}
		if out, ok := hostOutputSchema(raw); ok && out != nil {
			var m map[string]any
			if err := json.Unmarshal(out, &m); err != nil || m["type"] != "object" {
				t.Fatalf("hostOutputSchema(%s) = %s: not an object schema (%v)", in, out, err)
			}
			tool.OutputSchema = out
		}
		tool.Icons, _ = hostIcons(raw)
		var ok bool
		if tool.Meta, ok = hostMeta(raw); ok && tool.Meta != nil {
			if _, err := json.Marshal(tool.Meta); err != nil {
				t.Fatalf("hostMeta(%s) does not encode: %v", in, err)
			}
		}
		tool.Annotations, _ = hostToolAnnotations(raw, len(in)%2 == 0)
		hostAnnotations(raw)
		s := mcp.NewServer(&mcp.Implementation{Name: "f"}, nil)
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("AddTool(%+v) panicked: %v", tool, r)
				}
			}()
			s.AddTool(tool, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
		}()
		if _, err := json.Marshal(tool); err != nil {
			t.Fatalf("the tool does not encode: %v", err)
		}
	})
}
