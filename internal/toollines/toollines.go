// Package toollines prints the tool list of `remotemcp tools --json`
// from the daemon's encoding of it, without decoding the tools. With
// 500 servers of 50 tools the list is ~16 MB, and decoding it only to
// encode every tool again cost the command most of its time (issue
// #21). The output is byte for byte what decoding each tool into a
// localapi.Tool and encoding it again prints.
package toollines

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/remotemcp/remotemcp/localapi"
)

// List reads the tool list from el without decoding the tools: each
// tool's JSON as the engine encoded it, sorted by name (the engine's own
// order), and the servers that could not be listed.
func List(ctx context.Context, el localapi.EncodedToolLister, req localapi.ToolsRequest) (*localapi.EncodedToolList, error) {
	enc, err := el.EncodedTools(ctx, req)
	if err != nil {
		return nil, err
	}
	l, err := localapi.SplitToolList(enc)
	if err != nil {
		return nil, err
	}
	for i, t := range l.Tools {
		// encoding/json writes a string's invalid UTF-8 as \ufffd, which
		// decodes to U+FFFD and is encoded again as that character: only
		// such a tool reads differently after a decode, so it gets one.
		if bytes.Contains(t.JSON, []byte(`\ufffd`)) {
			if l.Tools[i].JSON, err = reencode(t.JSON); err != nil {
				return nil, err
			}
		}
	}
	byName := func(x, y localapi.EncodedTool) int { return strings.Compare(x.Name, y.Name) }
	if !slices.IsSortedFunc(l.Tools, byName) {
		slices.SortStableFunc(l.Tools, byName)
	}
	return l, nil
}

// reencode is a tool's JSON decoded into a localapi.Tool and encoded again.
func reencode(raw json.RawMessage) (json.RawMessage, error) {
	var t localapi.Tool
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("local API tool list: %w", err)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(t); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Write prints tools as a JSON array, one tool per line: the layout of
// the command's other --json listings (cmd/remotemcp writeJSONLines).
func Write(w io.Writer, tools []localapi.EncodedTool) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteString("[")
	for i, t := range tools {
		if i > 0 {
			bw.WriteString(",")
		}
		bw.WriteString("\n  ")
		bw.Write(t.JSON)
	}
	if len(tools) > 0 {
		bw.WriteString("\n")
	}
	bw.WriteString("]\n")
	return bw.Flush()
}
