package hosts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tailscale/hujson"
)

// jsonCodec reads and edits JSON and JSONC files through hujson's syntax
// tree, which packs back byte for byte: only the members it adds,
// replaces or removes change, indented like their neighbours.
type jsonCodec struct {
	// strict refuses comments and trailing commas (FormatJSON).
	strict bool
}

// utf8BOM is kept in front of a file that starts with it.
var utf8BOM = []byte("\xef\xbb\xbf")

func (c jsonCodec) format() Format {
	if c.strict {
		return FormatJSON
	}
	return FormatJSONC
}

func (c jsonCodec) decode(data []byte) (map[string]any, error) {
	body := bytes.TrimPrefix(data, utf8BOM)
	if isBlank(body) {
		return map[string]any{}, nil
	}
	v, err := hujson.Parse(slices.Clone(body)) // Standardize rewrites it
	if err != nil {
		return nil, hujsonError(c.format(), err)
	}
	if c.strict && !v.IsStandard() {
		// Standardize blanks comments and trailing commas in place: the
		// first byte it changes is the first of them.
		std := v.Clone()
		std.Standardize()
		off := 0
		for sb := std.Pack(); off < len(sb) && off < len(body) && sb[off] == body[off]; off++ {
		}
		line, col := lineColumn(body, off)
		return nil, &ParseError{Format: FormatJSON, Line: line, Column: col, Msg: "a comment or trailing comma, which this host does not accept"}
	}
	if v.Value.Kind() != '{' {
		line, col := lineColumn(body, v.StartOffset)
		return nil, &ParseError{Format: c.format(), Line: line, Column: col, Msg: "the top level is not an object"}
	}
	v.Standardize()
	var doc map[string]any
	if err := json.Unmarshal(v.Pack(), &doc); err != nil {
		return nil, &ParseError{Format: c.format(), Msg: err.Error()}
	}
	return doc, nil
}

// hujsonError turns hujson's "hujson: line L, column C: msg".
func hujsonError(f Format, err error) *ParseError {
	pe := &ParseError{Format: f, Msg: strings.TrimPrefix(err.Error(), "hujson: ")}
	if _, serr := fmt.Sscanf(pe.Msg, "line %d, column %d:", &pe.Line, &pe.Column); serr == nil {
		if _, rest, ok := strings.Cut(pe.Msg, ": "); ok {
			pe.Msg = rest
		}
	}
	return pe
}

// lineColumn locates byte offset off of b, from 1.
func lineColumn(b []byte, off int) (line, col int) {
	off = min(off, len(b))
	return 1 + bytes.Count(b[:off], []byte("\n")), off - bytes.LastIndexByte(b[:off], '\n')
}

func (c jsonCodec) edit(h Host, data []byte, e *Entry) ([]byte, error) {
	body := bytes.TrimPrefix(data, utf8BOM)
	st := style{nl: newline(body), unit: "  ", pretty: true}
	var out []byte
	if isBlank(body) {
		if e == nil {
			return data, nil
		}
		kv := []member{{h.ServersKey, renderServers(h, *e, st.unit, st)}}
		out = []byte(renderObject(kv, "", st) + st.nl)
	} else {
		v, err := hujson.Parse(slices.Clone(body))
		if err != nil {
			return nil, hujsonError(c.format(), err)
		}
		root, ok := v.Value.(*hujson.Object)
		if !ok {
			return nil, fmt.Errorf("the top level is not an object")
		}
		ed := jsonEditor{h: h, body: body, st: st}
		ed.detect(v.StartOffset, root)
		if err := ed.set(v.StartOffset, root, e); err != nil {
			return nil, err
		}
		out = v.Pack()
	}
	if len(body) < len(data) {
		out = append(slices.Clip(utf8BOM), out...)
	}
	return out, nil
}

// style is how a JSON file is laid out.
type style struct {
	nl     string // line ending: "\n" or "\r\n"
	unit   string // one level of indentation
	pretty bool   // one member per line; false: all on one line
}

// newline returns the file's line ending.
func newline(b []byte) string {
	if bytes.Contains(b, []byte("\r\n")) {
		return "\r\n"
	}
	return "\n"
}

// in returns st for the members of obj: one per line unless obj's
// existing members share a line.
func (st style) in(obj *hujson.Object) style {
	if len(obj.Members) > 0 {
		st.pretty = bytes.ContainsRune(obj.Members[0].Name.BeforeExtra, '\n')
	}
	return st
}

// jsonEditor edits one parsed file.
type jsonEditor struct {
	h    Host
	body []byte // the file without its BOM; offsets refer to it
	st   style
}

// detect takes the indentation unit from the root's first member.
func (ed *jsonEditor) detect(rootStart int, root *hujson.Object) {
	ed.st = ed.st.in(root)
	if len(root.Members) == 0 || !ed.st.pretty {
		return
	}
	ind := indentAfterNewline(root.Members[0].Name.BeforeExtra)
	if u, ok := strings.CutPrefix(ind, lineIndent(ed.body, rootStart)); ok && u != "" {
		ed.st.unit = u
	}
}

// set sets (e != nil) or removes our entry under the root object.
func (ed *jsonEditor) set(rootStart int, root *hujson.Object, e *Entry) error {
	h, st := ed.h, ed.st
	si, err := memberIndex(root, h.ServersKey)
	if err != nil {
		return err
	}
	rootIndent := lineIndent(ed.body, rootStart)
	if si < 0 {
		if e == nil {
			return nil
		}
		ind := childIndent(root, rootIndent, st)
		return appendMember(root, h.ServersKey, renderServers(h, *e, ind, st.in(root)), ind, rootIndent, st)
	}
	sm := &root.Members[si]
	base := lineIndent(ed.body, sm.Name.StartOffset)
	obj, ok := sm.Value.Value.(*hujson.Object)
	if !ok { // null: decode refuses anything else
		if e == nil {
			return nil
		}
		return replaceValue(&sm.Value, renderServers(h, *e, base, st))
	}
	ei, err := memberIndex(obj, EntryName)
	if err != nil {
		return err
	}
	switch {
	case e == nil:
		if ei >= 0 {
			removeMember(obj, ei)
		}
		return nil
	case ei >= 0:
		m := &obj.Members[ei]
		return replaceValue(&m.Value, renderEntry(h, *e, lineIndent(ed.body, m.Name.StartOffset), st.in(obj)))
	default:
		ind := childIndent(obj, base, st)
		return appendMember(obj, EntryName, renderEntry(h, *e, ind, st.in(obj)), ind, base, st)
	}
}

// memberIndex returns the index of obj's member name, -1 if none. A name
// given twice is refused: hosts read the last, editors often the first.
func memberIndex(obj *hujson.Object, name string) (int, error) {
	idx, n := -1, 0
	for i, m := range obj.Members {
		if lit, ok := m.Name.Value.(hujson.Literal); ok && lit.String() == name {
			idx, n = i, n+1
		}
	}
	if n > 1 {
		return -1, fmt.Errorf("%q appears %d times in one object; keep one and run again", name, n)
	}
	return idx, nil
}

// replaceValue replaces v's value with the JSON text val, keeping the
// comments and spacing around it.
func replaceValue(v *hujson.Value, val string) error {
	nv, err := hujson.Parse([]byte(val))
	if err != nil {
		return fmt.Errorf("render the entry: %w", err)
	}
	v.Value = nv.Value
	return nil
}

// appendMember adds name: val as obj's last member, on its own line at
// memberIndent (the closing brace at closeIndent) unless obj is on one
// line. Comments before the closing brace stay with the member before.
func appendMember(obj *hujson.Object, name, val, memberIndent, closeIndent string, st style) error {
	nv, err := hujson.Parse([]byte(val))
	if err != nil {
		return fmt.Errorf("render the entry: %w", err)
	}
	m := hujson.ObjectMember{Name: hujson.Value{Value: hujson.String(name)}, Value: hujson.Value{Value: nv.Value}}
	n := len(obj.Members)
	if n > 0 && obj.Members[n-1].Value.AfterExtra != nil {
		m.Value.AfterExtra = hujson.Extra{} // the file ends objects with a comma
	}
	oa := obj.AfterExtra
	if st.in(obj).pretty {
		m.Value.BeforeExtra = hujson.Extra(" ")
		if i := bytes.LastIndexByte(oa, '\n'); i >= 0 {
			m.Name.BeforeExtra = cat(oa[:i+1], []byte(memberIndent))
		} else {
			m.Name.BeforeExtra = cat(bytes.TrimRight(oa, " \t"), []byte(st.nl+memberIndent))
		}
		obj.AfterExtra = cat([]byte(st.nl + closeIndent))
	} else {
		sp := ""
		if n > 0 && string(obj.Members[n-1].Value.BeforeExtra) == " " {
			sp = " "
		}
		m.Value.BeforeExtra = cat([]byte(sp))
		m.Name.BeforeExtra = cat(oa, []byte(sp))
		obj.AfterExtra = nil
	}
	obj.Members = append(obj.Members, m)
	return nil
}

// removeMember removes obj's member k. Comments before it and after the
// line it ends on stay; the layout around it closes up.
func removeMember(obj *hujson.Object, k int) {
	m := obj.Members[k]
	n := len(obj.Members)
	if k < n-1 {
		next := &obj.Members[k+1]
		if bytes.ContainsRune(next.Name.BeforeExtra, '\n') {
			next.Name.BeforeExtra = cat(headOf(m.Name.BeforeExtra), dropFirstLine(next.Name.BeforeExtra))
		} else {
			next.Name.BeforeExtra = m.Name.BeforeExtra
		}
	} else {
		after := cat(headOf(m.Name.BeforeExtra), dropFirstLine(obj.AfterExtra))
		if k > 0 {
			prev := &obj.Members[k-1]
			switch {
			case m.Value.AfterExtra == nil && prev.Value.AfterExtra != nil:
				after = cat(prev.Value.AfterExtra, after) // no trailing comma after prev now
				prev.Value.AfterExtra = nil
			case m.Value.AfterExtra != nil && prev.Value.AfterExtra == nil:
				prev.Value.AfterExtra = hujson.Extra{} // keep the trailing comma
			}
		}
		if k == 0 && isBlank(after) {
			after = nil
		}
		obj.AfterExtra = after
	}
	obj.Members = slices.Delete(obj.Members, k, k+1)
}

// headOf is the extra before a member up to its last line break (the
// comments before the member), or without trailing blanks on one line.
func headOf(x []byte) []byte {
	if i := bytes.LastIndexByte(x, '\n'); i >= 0 {
		return x[:i+1]
	}
	return bytes.TrimRight(x, " \t")
}

// dropFirstLine drops x up to and including its first line break (the
// rest of a removed member's last line).
func dropFirstLine(x []byte) []byte {
	if i := bytes.IndexByte(x, '\n'); i >= 0 {
		return x[i+1:]
	}
	return x
}

// cat concatenates into a new Extra (never aliasing the input file).
func cat(parts ...[]byte) hujson.Extra {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	if b == nil {
		b = []byte{}
	}
	return b
}

// isBlank reports whether b is only JSON whitespace.
func isBlank(b []byte) bool { return len(bytes.Trim(b, " \t\r\n")) == 0 }

// lineIndent returns the spaces and tabs that start the line holding
// offset off.
func lineIndent(b []byte, off int) string {
	off = min(off, len(b))
	start := bytes.LastIndexByte(b[:off], '\n') + 1
	line := b[start:off]
	return string(line[:len(line)-len(bytes.TrimLeft(line, " \t"))])
}

// indentAfterNewline returns the spaces and tabs after x's last line
// break.
func indentAfterNewline(x []byte) string {
	rest := x[bytes.LastIndexByte(x, '\n')+1:]
	return string(rest[:len(rest)-len(bytes.TrimLeft(rest, " \t"))])
}

// childIndent is the indentation of obj's members: that of its last
// member on its own line, else one unit more than base.
func childIndent(obj *hujson.Object, base string, st style) string {
	if n := len(obj.Members); n > 0 && bytes.ContainsRune(obj.Members[n-1].Name.BeforeExtra, '\n') {
		return indentAfterNewline(obj.Members[n-1].Name.BeforeExtra)
	}
	return base + st.unit
}

// member is a name and its rendered JSON value.
type member struct{ name, val string }

// renderObject renders members as an object whose closing brace is at
// indent.
func renderObject(ms []member, indent string, st style) string {
	var b strings.Builder
	b.WriteString("{")
	for i, m := range ms {
		if st.pretty {
			b.WriteString(st.nl + indent + st.unit + jsonString(m.name) + ": " + m.val)
		} else {
			b.WriteString(jsonString(m.name) + ":" + m.val)
		}
		if i < len(ms)-1 {
			b.WriteString(",")
		}
	}
	if st.pretty {
		b.WriteString(st.nl + indent)
	}
	b.WriteString("}")
	return b.String()
}

// renderEntry renders our entry for h; indent is its line's.
func renderEntry(h Host, e Entry, indent string, st style) string {
	var ms []member
	if e.IsHTTP() {
		if h.Remote.Type != "" {
			ms = append(ms, member{"type", jsonString(h.Remote.Type)})
		}
		var hdrs []member
		for _, k := range slices.Sorted(maps.Keys(e.Headers)) {
			hdrs = append(hdrs, member{k, jsonString(e.Headers[k])})
		}
		ms = append(ms, member{h.Remote.URLKey, jsonString(e.URL)},
			member{h.Remote.HeadersKey, renderObject(hdrs, indent+st.unit, st)})
		return renderObject(ms, indent, st)
	}
	if h.EntryType != "" {
		ms = append(ms, member{"type", jsonString(h.EntryType)})
	}
	args := make([]string, len(e.Args))
	for i, a := range e.Args {
		args[i] = jsonString(a)
	}
	sp := ","
	if st.pretty {
		sp = ", "
	}
	ms = append(ms, member{"command", jsonString(e.Command)}, member{"args", "[" + strings.Join(args, sp) + "]"})
	return renderObject(ms, indent, st)
}

// renderServers renders a servers object holding only our entry.
func renderServers(h Host, e Entry, indent string, st style) string {
	return renderObject([]member{{EntryName, renderEntry(h, e, indent+st.unit, st)}}, indent, st)
}

// jsonString renders s as a JSON string, without HTML escaping.
func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}
