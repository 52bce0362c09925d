package session

import (
	"bytes"
	"io"
	"net/http"
	"sync"
)

// rpcMethodOf returns the JSON-RPC method of a POST from a copy of its
// body (GetBody), "" when there is none to read. The request log calls it
// once per POST; statusTransport only on a refused POST.
func rpcMethodOf(req *http.Request) string {
	if req.Method != http.MethodPost || req.GetBody == nil {
		return ""
	}
	body, err := req.GetBody()
	if err != nil {
		return ""
	}
	return peekRPCMethod(body)
}

// postMethod is rpcMethodOf for the request log, which names the method
// of every POST: a tool call's own POST is the first made under its
// request's slot (go-sdk writes it before anything else of the call, and
// only a cancel of it, its notifications/cancelled, comes after), so it
// is "tools/call" without a read of the body's copy.
func postMethod(req *http.Request) string {
	if req.Method == http.MethodPost {
		if slot := requestSlotFrom(req.Context()); slot != nil && slot.call != "" && slot.posted.CompareAndSwap(false, true) {
			return "tools/call"
		}
	}
	return rpcMethodOf(req)
}

// peekRPCMethod finds the JSON-RPC method in a request body (a copy)
// with a scan rather than a decode: this runs on every POST. The method
// is found in the first peekSize bytes of every message go-sdk writes
// (it comes before the params), so only those are read, into a pooled
// buffer; a body where the prefix does not decide it is read whole (up
// to 1 MiB), as before.
func peekRPCMethod(rc io.ReadCloser) string {
	defer rc.Close()
	buf := peekBufs.Get().(*[peekSize]byte)
	defer peekBufs.Put(buf) // method never refers to buf: see rpcMethodName
	n, err := io.ReadFull(rc, buf[:])
	complete := err == io.EOF || err == io.ErrUnexpectedEOF
	if err != nil && !complete {
		return ""
	}
	if m, decided := scanRPCMethod(buf[:n], complete); decided {
		return rpcMethodName(m)
	}
	rest, err := io.ReadAll(io.LimitReader(rc, 1<<20-peekSize))
	if err != nil {
		return ""
	}
	data := append(buf[:n:n], rest...) // a copy: buf goes back to the pool
	m, _ := scanRPCMethod(data, true)
	return rpcMethodName(m)
}

const peekSize = 512

var peekBufs = sync.Pool{New: func() any { return new([peekSize]byte) }}

// scanRPCMethod finds the value of the first "method" member in data, a
// prefix of the body (all of it when complete). decided is false when
// more of the body could change the answer.
func scanRPCMethod(data []byte, complete bool) (method []byte, decided bool) {
	i := bytes.Index(data, []byte(`"method"`))
	if i < 0 {
		return nil, complete
	}
	rest := bytes.TrimLeft(data[i+len(`"method"`):], " \t\r\n")
	if len(rest) == 0 {
		return nil, complete
	}
	rest, ok := bytes.CutPrefix(rest, []byte(":"))
	if !ok {
		return nil, true
	}
	rest = bytes.TrimLeft(rest, " \t\r\n")
	if len(rest) == 0 {
		return nil, complete
	}
	rest, ok = bytes.CutPrefix(rest, []byte(`"`))
	if !ok {
		return nil, true
	}
	end := bytes.IndexByte(rest, '"')
	switch {
	case end > 128 || end < 0 && len(rest) > 128:
		return nil, true
	case end < 0:
		return nil, complete
	}
	return rest[:end], true
}

// rpcMethodName returns m as a string, without allocating for the
// methods a client sends.
func rpcMethodName(m []byte) string {
	switch string(m) {
	case "":
		return ""
	case "tools/call":
		return "tools/call"
	case "tools/list":
		return "tools/list"
	case "notifications/cancelled":
		return "notifications/cancelled"
	case "notifications/initialized":
		return "notifications/initialized"
	case "initialize":
		return "initialize"
	case "ping":
		return "ping"
	case "prompts/get":
		return "prompts/get"
	case "prompts/list":
		return "prompts/list"
	case "resources/read":
		return "resources/read"
	case "resources/list":
		return "resources/list"
	case "resources/templates/list":
		return "resources/templates/list"
	case "logging/setLevel":
		return "logging/setLevel"
	case "completion/complete":
		return "completion/complete"
	}
	return string(m)
}
