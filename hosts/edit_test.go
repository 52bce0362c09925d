package hosts

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func host(t *testing.T, id string) Host {
	t.Helper()
	h, ok := Lookup(id)
	if !ok {
		t.Fatalf("no host %s", id)
	}
	return h
}

// editCase is one edit of a file's bytes: set (e != nil) or remove.
type editCase struct {
	name    string
	host    string
	in      string
	e       *Entry // nil: remove
	want    string // "" with wantErr; == in means no change
	wantErr string
}

var testEntry = &Entry{Command: "/bin/rm", Args: []string{"mcp"}}

func runEditCases(t *testing.T, cases []editCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := host(t, c.host)
			out, changed, err := h.editData([]byte(c.in), c.e)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, c.wantErr)
				}
				if errors.Is(err, errEditBug) {
					t.Fatalf("refusal reported as a bug: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != c.want {
				t.Fatalf("got:\n%s\nwant:\n%s", out, c.want)
			}
			if changed != (c.want != c.in) {
				t.Fatalf("changed = %v", changed)
			}
			// the same edit again changes nothing
			if out2, changed2, err := h.editData(out, c.e); err != nil || changed2 || !bytes.Equal(out2, out) {
				t.Fatalf("second edit: changed %v, err %v", changed2, err)
			}
		})
	}
}

func TestEditJSON(t *testing.T) {
	const entry = "{\n      \"command\": \"/bin/rm\",\n      \"args\": [\"mcp\"]\n    }"
	const created = "{\n  \"mcpServers\": {\n    \"remotemcp\": " + entry + "\n  }\n}\n"
	runEditCases(t, []editCase{
		{name: "empty file", host: "cursor", in: "", e: testEntry, want: created},
		{name: "blank file", host: "claude-desktop", in: " \n", e: testEntry, want: created},
		{name: "empty object", host: "cursor", in: "{}", e: testEntry, want: strings.TrimSuffix(created, "\n")},
		{name: "remove the only entry", host: "cursor", in: strings.TrimSuffix(created, "\n"), want: "{\n  \"mcpServers\": {}\n}"},
		{name: "remove from empty object", host: "cursor", in: "{}", want: "{}"},
		{
			name: "no servers key", host: "claude-desktop", e: testEntry,
			in:   "{\n  \"a\": 1\n}\n",
			want: "{\n  \"a\": 1,\n  \"mcpServers\": {\n    \"remotemcp\": " + entry + "\n  }\n}\n",
		},
		{
			name: "servers null", host: "claude-desktop", e: testEntry,
			in:   "{\n  \"mcpServers\": null\n}",
			want: "{\n  \"mcpServers\": {\n    \"remotemcp\": " + entry + "\n  }\n}",
		},
		{name: "remove with servers null", host: "claude-desktop", in: `{"mcpServers": null}`, want: `{"mcpServers": null}`},
		{
			name: "one line", host: "cursor", e: testEntry,
			in:   `{"mcpServers":{"a":{"command":"x"}}}`,
			want: `{"mcpServers":{"a":{"command":"x"},"remotemcp":{"command":"/bin/rm","args":["mcp"]}}}`,
		},
		{
			name: "remove on one line", host: "cursor",
			in:   `{"mcpServers": {"a": {"command": "x"}, "remotemcp": {"command": "/bin/rm", "args": ["mcp"]}}}`,
			want: `{"mcpServers": {"a": {"command": "x"}}}`,
		},
		{
			name: "replace a stale entry in place", host: "cursor", e: testEntry,
			in:   "{\n  \"mcpServers\": {\n    \"remotemcp\": {\n      \"command\": \"/old\"\n    }, // mine\n    \"b\": {}\n  }\n}",
			want: "{\n  \"mcpServers\": {\n    \"remotemcp\": " + entry + ", // mine\n    \"b\": {}\n  }\n}",
		},
		{
			name: "same entry, other layout", host: "cursor", e: testEntry,
			in:   `{"mcpServers": {"remotemcp": {"args": ["mcp"], "command": "/bin/rm"}}}`,
			want: `{"mcpServers": {"remotemcp": {"args": ["mcp"], "command": "/bin/rm"}}}`,
		},
		{
			name: "remove the first of two", host: "cursor",
			in:   "{\n  \"mcpServers\": {\n    \"remotemcp\": {\"command\": \"/x\"}, // ours\n    \"b\": {}\n  }\n}",
			want: "{\n  \"mcpServers\": {\n    \"b\": {}\n  }\n}",
		},
		{
			name: "a comment in an empty servers object", host: "cursor", e: testEntry,
			in:   "{\n  \"mcpServers\": {\n    // none yet\n  }\n}",
			want: "{\n  \"mcpServers\": {\n    // none yet\n    \"remotemcp\": " + entry + "\n  }\n}",
		},
		{
			name: "remove after a comment", host: "cursor",
			in:   "{\n  \"mcpServers\": {\n    // none yet\n    \"remotemcp\": " + entry + "\n  }\n}",
			want: "{\n  \"mcpServers\": {\n    // none yet\n  }\n}",
		},
		{
			name: "trailing commas", host: "vscode", e: testEntry,
			in:   "{\n  \"servers\": {\n    \"a\": {},\n  },\n}",
			want: "{\n  \"servers\": {\n    \"a\": {},\n    \"remotemcp\": {\n      \"type\": \"stdio\",\n      \"command\": \"/bin/rm\",\n      \"args\": [\"mcp\"]\n    },\n  },\n}",
		},
		{
			name: "remove with trailing commas", host: "vscode",
			in:   "{\n  \"servers\": {\n    \"a\": {},\n    \"remotemcp\": {\"type\": \"stdio\"},\n  },\n}",
			want: "{\n  \"servers\": {\n    \"a\": {},\n  },\n}",
		},
		{
			name: "CRLF", host: "cursor", e: testEntry,
			in:   "{\r\n\t\"mcpServers\": {\r\n\t\t\"a\": {}\r\n\t}\r\n}\r\n",
			want: "{\r\n\t\"mcpServers\": {\r\n\t\t\"a\": {},\r\n\t\t\"remotemcp\": {\r\n\t\t\t\"command\": \"/bin/rm\",\r\n\t\t\t\"args\": [\"mcp\"]\r\n\t\t}\r\n\t}\r\n}\r\n",
		},
		{name: "BOM", host: "cursor", in: "\xef\xbb\xbf{}", e: testEntry, want: "\xef\xbb\xbf" + strings.TrimSuffix(created, "\n")},
		{
			name: "escapes", host: "claude-desktop", e: &Entry{Command: `C:\Program Files\remotemcp "x".exe`, Args: []string{"--data-dir", `C:\Users\u\<rm>`, "mcp"}},
			in:   "{}",
			want: "{\n  \"mcpServers\": {\n    \"remotemcp\": {\n      \"command\": \"C:\\\\Program Files\\\\remotemcp \\\"x\\\".exe\",\n      \"args\": [\"--data-dir\", \"C:\\\\Users\\\\u\\\\<rm>\", \"mcp\"]\n    }\n  }\n}",
		},
		{name: "duplicate servers key", host: "cursor", in: `{"mcpServers": {}, "mcpServers": {}}`, e: testEntry, wantErr: `"mcpServers" appears 2 times`},
		{name: "duplicate entry", host: "cursor", in: `{"mcpServers": {"remotemcp": {}, "remotemcp": {}}}`, wantErr: `"remotemcp" appears 2 times`},
		{name: "servers is an array", host: "cursor", in: `{"mcpServers": []}`, e: testEntry, wantErr: `"mcpServers" is an array`},
		{name: "top level array", host: "cursor", in: `[]`, e: testEntry, wantErr: "the top level is not an object"},
		{name: "comments in strict JSON", host: "claude-code", in: "{} // x\n", e: testEntry, wantErr: "comment or trailing comma"},
	})
}

func TestEditTOML(t *testing.T) {
	const table = "[mcp_servers.remotemcp]\ncommand = \"/bin/rm\"\nargs = [\"mcp\"]\n"
	runEditCases(t, []editCase{
		{name: "empty file", host: "codex", in: "", e: testEntry, want: table},
		{name: "no final newline", host: "codex", in: `model = "x"`, e: testEntry, want: "model = \"x\"\n\n" + table},
		{name: "ends with a blank line", host: "codex", in: "model = \"x\"\n\n", e: testEntry, want: "model = \"x\"\n\n" + table},
		{name: "remove the last table", host: "codex", in: "model = \"x\"\n\n" + table, want: "model = \"x\"\n"},
		{
			name: "replace in place, sub-table too", host: "codex", e: testEntry,
			in:   "model = \"x\"\n\n# mine\n[ mcp_servers . \"remotemcp\" ] # old\ncommand = \"/old\"\nargs = []\n\n[mcp_servers.remotemcp.env]\nA = \"1\"\n\n[other]\nk = 1\n",
			want: "model = \"x\"\n\n# mine\n" + table + "\n[other]\nk = 1\n",
		},
		{
			name: "remove in the middle", host: "codex",
			in:   "model = \"x\"\n\n" + table + "\n[other]\nk = 1\n",
			want: "model = \"x\"\n\n[other]\nk = 1\n",
		},
		{
			name: "multi-line array and comments", host: "codex",
			in:   "a = 1\n\n" + "[mcp_servers.remotemcp]\ncommand = \"/x\"\nargs = [\n  \"mcp\", # why\n]\n# about b\n[b]\n",
			want: "a = 1\n\n# about b\n[b]\n",
		},
		{name: "inline table", host: "codex", in: "[mcp_servers]\nremotemcp = { command = \"/old\" }\n", e: testEntry, wantErr: "line 2 sets mcp_servers.remotemcp as a value"},
		{name: "inline table, remove", host: "codex", in: "[mcp_servers]\nremotemcp = { command = \"/old\" }\n", wantErr: "line 2 sets"},
		{name: "dotted keys", host: "codex", in: "mcp_servers.remotemcp.command = \"/old\"\n", e: testEntry, wantErr: "line 1 sets mcp_servers.remotemcp.command"},
		{name: "inline servers", host: "codex", in: "mcp_servers = { a = { command = \"x\" } }\n", e: testEntry, wantErr: "line 1 sets mcp_servers as a value"},
		{
			name: "same entry inline is no change", host: "codex", e: testEntry,
			in:   "mcp_servers = { remotemcp = { command = \"/bin/rm\", args = [\"mcp\"] } }\n",
			want: "mcp_servers = { remotemcp = { command = \"/bin/rm\", args = [\"mcp\"] } }\n",
		},
		{name: "array of tables", host: "codex", in: "[[mcp_servers.remotemcp]]\ncommand = \"x\"\n", e: testEntry, wantErr: "array of tables"},
		{name: "servers not a table", host: "codex", in: "mcp_servers = \"x\"\n", e: testEntry, wantErr: `"mcp_servers" is a string`},
		{name: "CRLF", host: "codex", in: "model = \"x\"\r\n", e: testEntry, want: "model = \"x\"\r\n\r\n" + strings.ReplaceAll(table, "\n", "\r\n")},
		{
			name: "escapes", host: "codex", e: &Entry{Command: `C:\Program Files\rm "x".exe`, Args: []string{"--data-dir", "D:\\data\tdir", "mcp"}},
			in:   "",
			want: "[mcp_servers.remotemcp]\ncommand = \"C:\\\\Program Files\\\\rm \\\"x\\\".exe\"\nargs = [\"--data-dir\", \"D:\\\\data\\tdir\", \"mcp\"]\n",
		},
	})
}

// TestDiff shows the lines that change, with context.
func TestDiff(t *testing.T) {
	c := Change{
		Path: "/f", Existed: true, Changed: true,
		Before: []byte("a\nb\nc\nd\ne\n"),
		After:  []byte("a\nb\nc\nX\nd\ne\n"),
	}
	want := "--- /f\n+++ /f\n@@ -2,4 +2,5 @@\n b\n c\n+X\n d\n e\n"
	if got := c.Diff(); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	c = Change{Path: "/f", Changed: true, After: []byte("x\n")}
	want = "--- /dev/null\n+++ /f\n@@ -0,0 +1,1 @@\n+x\n"
	if got := c.Diff(); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}
