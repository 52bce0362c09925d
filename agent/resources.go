package agent

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ResourceEntry is a resource or resource template offered to @ search
// (R4.3).
type ResourceEntry struct {
	ServerID string `json:"serverId"`
	// URI is the resource URI, or the URI template when Template is set.
	URI         string `json:"uri"`
	Template    bool   `json:"template,omitempty"`
	Name        string `json:"name,omitempty"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mimeType,omitempty"`
	Size        int64  `json:"size,omitempty"`
	// Annotations, Icons and Meta (_meta) are the server's, as JSON;
	// absent when it sent none. Read-only: entries share them.
	Annotations json.RawMessage `json:"annotations,omitempty"`
	Icons       json.RawMessage `json:"icons,omitempty"`
	Meta        json.RawMessage `json:"_meta,omitempty"`
}

// Titles and descriptions of resources and templates show invisible
// characters, as a tool's do (issue #20 item 3, review finding 2).
func resourceEntry(server string, r *mcp.Resource) ResourceEntry {
	return ResourceEntry{ServerID: server, URI: r.URI, Name: r.Name, Title: ShowHidden(r.Title), Description: ShowHidden(r.Description),
		MIMEType: r.MIMEType, Size: r.Size, Annotations: rawJSON(r.Annotations), Icons: rawJSON(r.Icons), Meta: rawJSON(r.Meta)}
}

func templateEntry(server string, t *mcp.ResourceTemplate) ResourceEntry {
	return ResourceEntry{ServerID: server, URI: t.URITemplate, Template: true, Name: t.Name, Title: ShowHidden(t.Title),
		Description: ShowHidden(t.Description), MIMEType: t.MIMEType, Annotations: rawJSON(t.Annotations), Icons: rawJSON(t.Icons), Meta: rawJSON(t.Meta)}
}

// rawJSON is a decoded field of a server's definition as JSON, nil when
// the server sent none (or it does not encode, which a decoded value
// always does).
func rawJSON[T any](v T) json.RawMessage {
	switch x := any(v).(type) {
	case *mcp.Annotations:
		if x == nil {
			return nil
		}
	case []mcp.Icon:
		if len(x) == 0 {
			return nil
		}
	case mcp.Meta:
		if len(x) == 0 {
			return nil
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

// Mention is the entry's "@server:URI" form, as ParseMention takes it.
func (e ResourceEntry) Mention() string { return "@" + e.ServerID + ":" + e.URI }

// Match ranks: lower is better. Exact beats prefix beats substring; within
// each, name beats title beats URI.
const (
	rankNameExact = iota
	rankTitleExact
	rankURIExact
	rankNamePrefix
	rankTitlePrefix
	rankURIPrefix
	rankNameSub
	rankTitleSub
	rankURISub
	rankNone
)

// SearchResources is the @ search (R4.3): a case-insensitive match of the
// query against name, title and URI, ranked exact > prefix > substring and
// name before title before URI; ties go by server, then name, then URI.
// A leading "@" is ignored; "server:rest" searches only that server when
// server is a known id. An empty query lists everything. limit <= 0 means
// no limit.
func (s *Snapshot) SearchResources(query string, limit int) []ResourceEntry {
	snap := s
	q := strings.TrimPrefix(strings.TrimSpace(query), "@")
	server := ""
	if i := strings.IndexByte(q, ':'); i > 0 && slices.Contains(snap.servers, q[:i]) {
		server, q = q[:i], q[i+1:]
	}
	q = strings.ToLower(q)
	type hit struct {
		e    ResourceEntry
		rank int
	}
	var hits []hit
	for _, e := range snap.resources {
		if server != "" && e.ServerID != server {
			continue
		}
		rank := rankOf(q, e)
		if rank == rankNone {
			continue
		}
		hits = append(hits, hit{e, rank})
	}
	slices.SortStableFunc(hits, func(a, b hit) int {
		if a.rank != b.rank {
			return a.rank - b.rank
		}
		if c := strings.Compare(a.e.ServerID, b.e.ServerID); c != 0 {
			return c
		}
		if c := strings.Compare(a.e.Name, b.e.Name); c != 0 {
			return c
		}
		return strings.Compare(a.e.URI, b.e.URI)
	})
	if limit > 0 && len(hits) > limit {
		hits = hits[:limit]
	}
	out := make([]ResourceEntry, len(hits))
	for i, h := range hits {
		out[i] = h.e
	}
	return out
}

func rankOf(q string, e ResourceEntry) int {
	if q == "" {
		return rankNameExact
	}
	fields := [3]string{strings.ToLower(e.Name), strings.ToLower(e.Title), strings.ToLower(e.URI)}
	best := rankNone
	for i, f := range fields {
		if f == "" {
			continue
		}
		switch {
		case f == q:
			best = min(best, rankNameExact+i)
		case strings.HasPrefix(f, q):
			best = min(best, rankNamePrefix+i)
		case strings.Contains(f, q):
			best = min(best, rankNameSub+i)
		}
	}
	return best
}

// ParseMention splits "@server:URI" (the "@" is optional).
func ParseMention(mention string) (server, uri string, err error) {
	m := strings.TrimPrefix(strings.TrimSpace(mention), "@")
	server, uri, ok := strings.Cut(m, ":")
	if !ok || server == "" || uri == "" {
		return "", "", fmt.Errorf("%w, got %q", ErrBadMention, mention)
	}
	return server, uri, nil
}

// ResourceResult is a read resource, to attach as untrusted context.
type ResourceResult struct {
	Mention string         `json:"mention"`
	Blocks  []ContextBlock `json:"blocks"`
	// Notes say what the size budget cut (trusted, remotemcp's words).
	Notes []string `json:"notes,omitempty"`
}

// NewResourceResult converts a validated read of uri on server for the
// model: each content becomes an untrusted ContextBlock with its URI and
// MIME type (R4.3). Binary contents are summarised ("[binary image/png,
// 1234 bytes]"), never dumped as text; text is cut to budget b with a
// marker.
func NewResourceResult(server, uri string, res *mcp.ReadResourceResult, b Budget) *ResourceResult {
	bu := b.start()
	out := &ResourceResult{Mention: "@" + server + ":" + uri}
	for _, c := range res.Contents {
		prov := Provenance{Server: server, Kind: KindResource, URI: c.URI}
		if c.Blob != nil {
			out.Blocks = append(out.Blocks, bu.binary(prov, c.MIMEType, c.Blob))
			continue
		}
		mime := c.MIMEType
		if mime == "" {
			mime = "text/plain"
		}
		if blk, ok := bu.text(prov, mime, "", c.Text); ok {
			out.Blocks = append(out.Blocks, blk)
		}
	}
	out.Notes = bu.notes()
	return out
}
