package hosts

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// tomlCodec reads TOML files and edits our entry as text: the entry is a
// [SERVERSKEY.remotemcp] table (with any sub-tables), replaced or removed
// line by line; every other byte is kept. A new entry is appended at the
// end of the file, after a blank line.
type tomlCodec struct{}

func (tomlCodec) decode(data []byte) (map[string]any, error) {
	doc := map[string]any{}
	if err := toml.Unmarshal(data, &doc); err != nil {
		pe := &ParseError{Format: FormatTOML, Msg: strings.TrimPrefix(err.Error(), "toml: ")}
		if de, ok := errors.AsType[*toml.DecodeError](err); ok {
			pe.Line, pe.Column = de.Position()
		}
		return nil, pe
	}
	return doc, nil
}

func (tomlCodec) edit(h Host, data []byte, e *Entry) ([]byte, error) {
	nl := newline(data)
	blocks, err := tomlBlocks(data, h.ServersKey, EntryName)
	if err != nil {
		return nil, err
	}
	var table []byte
	if e != nil {
		table = []byte(renderTOMLTable(h, *e, nl))
	}
	out := slices.Clone(data)
	if len(blocks) == 0 {
		if e == nil {
			return out, nil
		}
		if len(out) > 0 && !bytes.HasSuffix(out, []byte("\n")) {
			out = append(out, nl...)
		}
		if len(bytes.TrimSpace(out)) > 0 && !bytes.HasSuffix(out, []byte(nl+nl)) {
			out = append(out, nl...)
		}
		return append(out, table...), nil
	}
	// The entry's tables, last first: the first is replaced in place, the
	// others (and all of them on removal) go, with the blank line before
	// them when a blank line or the end of the file follows.
	for i := len(blocks) - 1; i >= 0; i-- {
		b := blocks[i]
		var repl []byte
		if e != nil && i == 0 {
			repl = table
		} else if bytes.HasSuffix(out[:b.start], []byte(nl+nl)) &&
			(b.end == len(out) || bytes.HasPrefix(out[b.end:], []byte(nl))) {
			b.start -= len(nl) // one blank line is enough between neighbours
		}
		out = slices.Concat(out[:b.start], repl, out[b.end:])
	}
	return out, nil
}

// span is a range of whole lines of a file.
type span struct{ start, end int }

// tomlBlocks returns the line ranges of the tables that make up entry
// name under serversKey: [serversKey.name] and its sub-tables, each from
// its header to its last key/value. An entry written another way (an
// inline table, dotted keys) is refused: it cannot be edited by lines.
func tomlBlocks(data []byte, serversKey, name string) ([]span, error) {
	ours := []string{serversKey, name}
	var (
		p       unstable.Parser
		blocks  []span
		cur     *span // the current table, when it is ours
		section []string
		lastEnd int
	)
	flush := func() {
		if cur != nil {
			cur.end = lineEnd(data, lastEnd)
			blocks = append(blocks, *cur)
			cur = nil
		}
	}
	p.Reset(data)
	for p.NextExpression() {
		ex := p.Expression()
		switch ex.Kind {
		case unstable.Table, unstable.ArrayTable:
			flush()
			keys, first, last := tomlKey(ex)
			section = keys
			if !hasPrefix(keys, ours) {
				continue
			}
			if ex.Kind == unstable.ArrayTable && len(keys) == len(ours) {
				line, _ := lineColumn(data, first)
				return nil, fmt.Errorf("line %d makes %s an array of tables, not a server; fix it by hand", line, strings.Join(keys, "."))
			}
			cur = &span{start: lineStart(data, first)}
			lastEnd = last
		case unstable.KeyValue:
			keys, first, _ := tomlKey(ex)
			if cur != nil {
				lastEnd = int(ex.Raw.Offset + ex.Raw.Length)
				continue
			}
			full := slices.Concat(section, keys)
			if hasPrefix(full, ours) || hasPrefix(ours, full) {
				line, _ := lineColumn(data, first)
				return nil, fmt.Errorf("line %d sets %s as a value, not as a [%s] table, which is the only form remotemcp edits: rewrite it as such a table (or delete it) and run again",
					line, strings.Join(full, "."), strings.Join(ours, "."))
			}
		}
	}
	flush()
	if err := p.Error(); err != nil {
		return nil, err
	}
	return blocks, nil
}

// tomlKey returns the parts of a table's or key/value's key, the offset
// of its first part and the end of its last.
func tomlKey(ex *unstable.Node) (keys []string, first, last int) {
	first = -1
	for it := ex.Key(); it.Next(); {
		n := it.Node()
		keys = append(keys, string(n.Data))
		if first < 0 {
			first = int(n.Raw.Offset)
		}
		last = int(n.Raw.Offset + n.Raw.Length)
	}
	return keys, max(first, 0), last
}

func hasPrefix(s, prefix []string) bool {
	return len(s) >= len(prefix) && slices.Equal(s[:len(prefix)], prefix)
}

// lineStart returns the offset where the line holding off starts.
func lineStart(b []byte, off int) int { return bytes.LastIndexByte(b[:off], '\n') + 1 }

// lineEnd returns the offset after the line break ending the line that
// holds off (len(b) on the last line).
func lineEnd(b []byte, off int) int {
	if i := bytes.IndexByte(b[off:], '\n'); i >= 0 {
		return off + i + 1
	}
	return len(b)
}

// renderTOMLTable renders our entry as a table; an HTTP entry's headers
// are an inline table, on the entry's own lines.
func renderTOMLTable(h Host, e Entry, nl string) string {
	head := "[" + tomlKeyPart(h.ServersKey) + "." + tomlKeyPart(EntryName) + "]" + nl
	if e.IsHTTP() {
		var hdrs []string
		for _, k := range slices.Sorted(maps.Keys(e.Headers)) {
			hdrs = append(hdrs, tomlKeyPart(k)+" = "+tomlString(e.Headers[k]))
		}
		return head + tomlKeyPart(h.Remote.URLKey) + " = " + tomlString(e.URL) + nl +
			tomlKeyPart(h.Remote.HeadersKey) + " = { " + strings.Join(hdrs, ", ") + " }" + nl
	}
	args := make([]string, len(e.Args))
	for i, a := range e.Args {
		args[i] = tomlString(a)
	}
	return head +
		"command = " + tomlString(e.Command) + nl +
		"args = [" + strings.Join(args, ", ") + "]" + nl
}

// tomlKeyPart renders a bare key, or a quoted one when needed.
func tomlKeyPart(k string) string {
	if k != "" && strings.Trim(k, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") == "" {
		return k
	}
	return tomlString(k)
}

// tomlString renders s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
