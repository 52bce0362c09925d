// Package jsonenc encodes JSON as go-sdk and the local API write it:
// encoding/json without its HTML escaping, which would rewrite "<", ">"
// and "&" inside a server's raw bytes (schemas, _meta) as \u003c….
package jsonenc

import (
	"bytes"
	"encoding/json"
)

// Marshal is json.Marshal without HTML escaping.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
