package pin

import (
	"bytes"
	"fmt"
	"strconv"
)

// Change is one difference between a pinned definition and a new one.
type Change struct {
	// Path names what changed: "title", "description", "annotations.X",
	// "inputSchema.properties.path", "inputSchema.required", ...
	Path string `json:"path"`
	// Kind is "added", "removed" or "changed".
	Kind string `json:"kind"`
	// Old and New are the text (title, description) or the canonical JSON
	// (anything else) before and after, cut at MaxChangeText with a marker.
	Old string `json:"old,omitempty"`
	New string `json:"new,omitempty"`
}

// Kinds of Change.
const (
	Added   = "added"
	Removed = "removed"
	Changed = "changed"
)

// Bounds of a diff: a hostile definition must not make it huge.
const (
	// MaxChanges is the most changes Diff returns; one more entry with
	// Path "…" says how many were left out.
	MaxChanges = 200
	// MaxChangeText bounds Old and New of one change, in bytes.
	MaxChangeText = 16 << 10
)

// Diff lists what changed from old to new, in a stable order: title,
// description, annotations, then the input and output schemas, whose
// properties are compared one by one (recursively for object properties)
// and whose required lists are compared as sets.
func Diff(old, new Definition) []Change {
	return diff(old, new).out
}

func diff(old, new Definition) *differ {
	d := &differ{}
	d.text("title", old.Title, new.Title)
	d.text("description", old.Description, new.Description)
	d.raw("annotations", old.Annotations, new.Annotations, false)
	d.raw("inputSchema", old.InputSchema, new.InputSchema, true)
	d.raw("outputSchema", old.OutputSchema, new.OutputSchema, true)
	if d.dropped > 0 {
		d.out = append(d.out, Change{Path: "…", Kind: Changed, New: strconv.Itoa(d.dropped) + " more changes not listed"})
	}
	return d
}

type differ struct {
	out     []Change
	dropped int
	// encoded counts the list elements encoded for set comparisons: the
	// work of a diff, which tests bound without a clock.
	encoded int
}

func (d *differ) add(c Change) {
	if len(d.out) >= MaxChanges {
		d.dropped++
		return
	}
	c.Old, c.New = cut(c.Old), cut(c.New)
	d.out = append(d.out, c)
}

func (d *differ) text(path, a, b string) {
	switch {
	case a == b:
	case a == "":
		d.add(Change{Path: path, Kind: Added, New: b})
	case b == "":
		d.add(Change{Path: path, Kind: Removed, Old: a})
	default:
		d.add(Change{Path: path, Kind: Changed, Old: a, New: b})
	}
}

// raw compares two JSON values; schema says whether to look inside
// properties and required. A value that cannot be decoded is compared
// as a whole, by its bytes.
func (d *differ) raw(path string, a, b []byte, schema bool) {
	va, errA := decode(a)
	vb, errB := decode(b)
	if errA != nil || errB != nil {
		if !bytes.Equal(a, b) {
			d.add(Change{Path: path, Kind: Changed, Old: string(a), New: string(b)})
		}
		return
	}
	d.value(path, va, vb, schema, 0)
}

// value compares two decoded values at path.
func (d *differ) value(path string, a, b any, schema bool, depth int) {
	switch {
	case a == nil && b == nil:
		return
	case a == nil:
		d.add(Change{Path: path, Kind: Added, New: enc(b)})
		return
	case b == nil:
		d.add(Change{Path: path, Kind: Removed, Old: enc(a)})
		return
	}
	oa, okA := a.(object)
	ob, okB := b.(object)
	if !okA || !okB || depth >= MaxDepth {
		if ea, eb := enc(a), enc(b); ea != eb {
			d.add(Change{Path: path, Kind: Changed, Old: ea, New: eb})
		}
		return
	}
	// Members of both objects in key order (both are sorted).
	i, j := 0, 0
	for i < len(oa) || j < len(ob) {
		switch {
		case j >= len(ob) || i < len(oa) && oa[i].key < ob[j].key:
			d.add(Change{Path: join(path, oa[i].key), Kind: Removed, Old: enc(oa[i].val)})
			i++
		case i >= len(oa) || oa[i].key > ob[j].key:
			d.add(Change{Path: join(path, ob[j].key), Kind: Added, New: enc(ob[j].val)})
			j++
		default:
			k := oa[i].key
			switch {
			case schema && k == "properties":
				// Each property is itself a schema.
				pa, _ := oa[i].val.(object)
				pb, _ := ob[j].val.(object)
				if pa != nil && pb != nil {
					d.props(join(path, k), pa, pb, depth+1)
				} else {
					d.value(join(path, k), oa[i].val, ob[j].val, false, depth+1)
				}
			case schema && k == "required":
				d.required(join(path, k), oa[i].val, ob[j].val)
			default:
				d.value(join(path, k), oa[i].val, ob[j].val, false, depth+1)
			}
			i++
			j++
		}
	}
}

// props compares two "properties" objects, recursing into schemas that
// are in both.
func (d *differ) props(path string, a, b object, depth int) {
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j >= len(b) || i < len(a) && a[i].key < b[j].key:
			d.add(Change{Path: join(path, a[i].key), Kind: Removed, Old: enc(a[i].val)})
			i++
		case i >= len(a) || a[i].key > b[j].key:
			d.add(Change{Path: join(path, b[j].key), Kind: Added, New: enc(b[j].val)})
			j++
		default:
			d.value(join(path, a[i].key), a[i].val, b[j].val, true, depth+1)
			i++
			j++
		}
	}
}

// required compares two "required" lists as sets of names: each name
// added or removed is one change. Each element is encoded once, into a
// set (issue #20 item 3 review: a hostile pair of 100k-name lists cost
// n² encodings), and once MaxChanges are listed the rest are only
// counted.
func (d *differ) required(path string, a, b any) {
	la, okA := a.([]any)
	lb, okB := b.([]any)
	if !okA || !okB {
		if ea, eb := enc(a), enc(b); ea != eb {
			d.add(Change{Path: path, Kind: Changed, Old: ea, New: eb})
		}
		return
	}
	ka, kb := d.keys(la), d.keys(lb)
	sa, sb := setOf(ka), setOf(kb)
	for _, k := range kb {
		if _, ok := sa[k]; !ok {
			d.add(Change{Path: path, Kind: Added, New: k})
		}
	}
	for _, k := range ka {
		if _, ok := sb[k]; !ok {
			d.add(Change{Path: path, Kind: Removed, Old: k})
		}
	}
}

// keys encodes each element of l once: its canonical JSON.
func (d *differ) keys(l []any) []string {
	out := make([]string, len(l))
	for i, v := range l {
		out[i] = enc(v)
		d.encoded++
	}
	return out
}

func setOf(l []string) map[string]struct{} {
	s := make(map[string]struct{}, len(l))
	for _, k := range l {
		s[k] = struct{}{}
	}
	return s
}

// join appends a key to a path; a key that is not a plain word is quoted,
// so a key holding dots or spaces cannot pass for a nested path.
func join(path, key string) string {
	plain := key != ""
	for _, r := range key {
		if !(r == '_' || r == '-' || r == '$' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			plain = false
			break
		}
	}
	if !plain {
		key = strconv.Quote(truncate(key, 256))
	}
	return path + "." + key
}

func enc(v any) string {
	var b bytes.Buffer
	encode(&b, v)
	return b.String()
}

// cut bounds a change's text, marking what was left out.
func cut(s string) string {
	if len(s) <= MaxChangeText {
		return s
	}
	t := truncate(s, MaxChangeText) // ends in "…"
	return fmt.Sprintf("%s (%d more bytes)", t, len(s)-(len(t)-len("…")))
}
