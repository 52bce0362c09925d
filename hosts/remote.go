package hosts

import (
	"errors"
	"net"
	"net/url"
	"strconv"
)

// CheckHTTPURL checks the URL of an HTTP entry: the endpoint of
// "remotemcp mcp --http" on this machine, so plain http on a loopback
// address, with a port, at the path /mcp, and nothing else (the entry's
// bearer token sent anywhere else would leak). It returns the URL as the
// entry writes it; the error says what is wrong with it.
func CheckHTTPURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Opaque != "" || u.Host == "":
		return "", errors.New("not an absolute http URL")
	case u.Scheme != "http":
		return "", errors.New("the scheme must be http (the endpoint is plain HTTP on loopback)")
	case u.User != nil:
		return "", errors.New("a URL with a user name or password is refused")
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return "", errors.New("a query or fragment is refused")
	}
	host, port := u.Hostname(), u.Port()
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return "", errors.New("only a loopback address (127.0.0.1, [::1] or localhost) is allowed: the endpoint listens on nothing else")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", errors.New("give the port")
	}
	if u.EscapedPath() != "/mcp" {
		return "", errors.New("the path must be /mcp")
	}
	return u.String(), nil
}
