package oauth

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/hostperm"
)

// challenge is what remotemcp uses of a 401/403 WWW-Authenticate header.
type challenge struct {
	resourceMetadata string   // resource_metadata URL, "" if none
	scopes           []string // the scope the server asks for (R3.9)
	errorCode        string   // Bearer error, e.g. "insufficient_scope"
}

// parseChallenge reads the WWW-Authenticate headers of resp with the SDK's
// parser (R3.1). Bearer challenges are preferred; resource_metadata is also
// taken from another scheme's challenge, as the SDK does, because some
// servers send it in a separate challenge.
func parseChallenge(h http.Header) (challenge, error) {
	vals := h.Values("WWW-Authenticate")
	if n := headerBytes(vals); n > MaxChallengeBytes {
		return challenge{}, fmt.Errorf("malformed WWW-Authenticate header: it is %d bytes, over the %d remotemcp reads (a challenge is a few hundred bytes): refused unread", n, MaxChallengeBytes)
	}
	cs, err := oauthex.ParseWWWAuthenticate(vals)
	if err != nil {
		return challenge{}, fmt.Errorf("malformed WWW-Authenticate header: %w", err)
	}
	var ch challenge
	for _, c := range cs {
		if c.Scheme != "bearer" {
			continue
		}
		if ch.resourceMetadata == "" {
			ch.resourceMetadata = c.Params["resource_metadata"]
		}
		if ch.scopes == nil && c.Params["scope"] != "" {
			ch.scopes = strings.Fields(c.Params["scope"])
		}
		if ch.errorCode == "" {
			ch.errorCode = c.Params["error"]
		}
	}
	if ch.resourceMetadata == "" {
		for _, c := range cs {
			if u := c.Params["resource_metadata"]; u != "" {
				ch.resourceMetadata = u
				break
			}
		}
	}
	return ch, nil
}

// MaxChallengeBytes bounds the WWW-Authenticate headers of one response
// that are parsed: the SDK's parser takes time that grows with the square
// of a header full of commas (0.7 s for 256 KiB), and a server's header
// may be megabytes long.
const MaxChallengeBytes = 16 << 10

func headerBytes(vals []string) int {
	n := 0
	for _, v := range vals {
		n += len(v)
	}
	return n
}

// hasBearerChallenge reports whether a 401's WWW-Authenticate headers
// carry a Bearer challenge, with or without parameters: what turns a
// server of auth kind auto into an OAuth one (SPEC §9 A2). A header the
// parser cannot read still counts when a challenge in it names Bearer.
func hasBearerChallenge(h http.Header) bool {
	vals := h.Values("WWW-Authenticate")
	// An oversized header gets only the plain scan below, which is linear.
	if headerBytes(vals) <= MaxChallengeBytes {
		if cs, err := oauthex.ParseWWWAuthenticate(vals); err == nil {
			for _, c := range cs {
				if strings.EqualFold(c.Scheme, "bearer") {
					return true
				}
			}
			return false
		}
	}
	for _, v := range vals {
		for part := range strings.SplitSeq(v, ",") {
			f := strings.Fields(part)
			if len(f) > 0 && strings.EqualFold(f[0], "bearer") {
				return true
			}
		}
	}
	return false
}

// resourceMeta is the validated part of protected resource metadata.
type resourceMeta struct {
	// Resource is the resource identifier exactly as published: it is sent
	// as RFC 8707 `resource` on the authorization, token and refresh
	// requests (the conformance suite checks it is sent unchanged).
	Resource             string
	AuthorizationServers []string
	ScopesSupported      []string
	// URL is where the document was found.
	URL string
}

// prmCandidate is one place to look for protected resource metadata and
// the resource identifiers the document found there may carry.
type prmCandidate struct {
	url       string
	resources []string
	source    string // for logs: "resource_metadata", "path well-known", "root well-known"
}

// prmCandidates lists, in order, where to look (R3.6): the 401's
// resource_metadata when it is same-origin with the MCP URL and https (or
// loopback http), then the path-aware well-known URL, then the root one.
//
// Which resource each may name: a document reached through the challenge or
// the path-aware well-known URL must name the canonical MCP resource itself
// (RFC 9728 §3.3, §5.1). At the root well-known URL RFC 9728 §3.3 expects the
// identifier the well-known path was inserted into, i.e. the origin; the
// go-sdk and the conformance suite (auth/metadata-var2) both expect exactly
// that, so the origin is accepted there, and so is the full canonical
// resource, which servers publishing one document for one endpoint often use.
func prmCandidates(log *slog.Logger, serverID, mcpURL, canonical, headerURL string) ([]prmCandidate, error) {
	origin, err := config.Origin(mcpURL)
	if err != nil {
		return nil, err
	}
	var out []prmCandidate
	if headerURL != "" {
		switch {
		case !config.SameOrigin(headerURL, mcpURL):
			log.Warn("oauth: ignoring resource_metadata from another origin; using the well-known locations",
				"server", serverID, "resource_metadata", redactURL(headerURL), "mcp_origin", origin)
		case checkEndpointURL("resource_metadata", headerURL) != nil:
			log.Warn("oauth: ignoring resource_metadata that is not https; using the well-known locations",
				"server", serverID, "resource_metadata", redactURL(headerURL))
		default:
			out = append(out, prmCandidate{url: headerURL, resources: []string{canonical}, source: "resource_metadata"})
		}
	}
	u, err := url.Parse(mcpURL)
	if err != nil {
		return nil, err
	}
	if p := strings.TrimLeft(u.EscapedPath(), "/"); p != "" {
		out = append(out, prmCandidate{
			url:       origin + "/.well-known/oauth-protected-resource/" + p,
			resources: []string{canonical},
			source:    "path well-known",
		})
	}
	out = append(out, prmCandidate{
		url:       origin + "/.well-known/oauth-protected-resource",
		resources: uniq([]string{origin, canonical}),
		source:    "root well-known",
	})
	return out, nil
}

// discoverPRM finds and validates the protected resource metadata of an MCP
// server (RFC 9728, R3.6, R3.7). A 4xx moves on to the next location; a
// redirect, a server error, a transport error or an invalid document stops
// discovery, since silently skipping a broken document could pick a
// different authorization server than the operator published.
func (a *Authenticator) discoverPRM(ctx context.Context, serverID, mcpURL, canonical, headerURL string) (*resourceMeta, error) {
	ctx = withStep(hostperm.WithPurpose(ctx, hostperm.PurposeDiscoveryPRM, serverID), StepDiscoveryPRM)
	cands, err := prmCandidates(a.log, serverID, mcpURL, canonical, headerURL)
	if err != nil {
		return nil, stepErr(StepDiscoveryPRM, serverID, err)
	}
	var tried []string
	for _, c := range cands {
		resp, err := a.getDoc(ctx, c.url)
		if err != nil {
			return nil, stepErr(StepDiscoveryPRM, serverID, err)
		}
		if isClientError(resp.status) {
			a.log.Debug("oauth: no protected resource metadata here", "server", serverID, "url", redactURL(c.url), "status", resp.status)
			tried = append(tried, fmt.Sprintf("%s (%d)", redactURL(c.url), resp.status))
			continue
		}
		if resp.status != http.StatusOK {
			return nil, stepErr(StepDiscoveryPRM, serverID, statusError(http.MethodGet, c.url, resp.status))
		}
		if err := checkJSONType(resp.header); err != nil {
			return nil, stepErr(StepDiscoveryPRM, serverID, fmt.Errorf("%s: %w", redactURL(c.url), err))
		}
		rm, err := validateResourceMetadata(resp.body, c.resources)
		if err != nil {
			return nil, stepErr(StepDiscoveryPRM, serverID, fmt.Errorf("%s: %w", redactURL(c.url), err))
		}
		rm.URL = c.url
		a.log.Debug("oauth: protected resource metadata found", "server", serverID, "url", redactURL(c.url), "source", c.source)
		return rm, nil
	}
	return nil, stepErr(StepDiscoveryPRM, serverID,
		fmt.Errorf("%w: no protected resource metadata at %s; the server does not follow the MCP authorization spec (2025-06-18 or later)",
			ErrNoMetadata, strings.Join(tried, ", ")))
}

// validateResourceMetadata parses a protected resource metadata document
// (RFC 9728 §2) and checks what remotemcp relies on: a JSON object whose
// resource is one of wantResources exactly (R3.7), a non-empty
// authorization_servers list of https (or loopback http) issuer URLs
// without query or fragment, and well-formed scopes_supported.
func validateResourceMetadata(body []byte, wantResources []string) (*resourceMeta, error) {
	obj, err := parseObject(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadMetadata, err)
	}
	res, ok, err := obj.str("resource")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadMetadata, err)
	}
	if !ok || res == "" {
		return nil, fmt.Errorf("%w: resource is missing", ErrBadMetadata)
	}
	if !slices.Contains(wantResources, res) {
		return nil, fmt.Errorf("%w: resource is %q, want %s", ErrResourceMismatch, sanitize(res, 200), quoteList(wantResources))
	}
	servers, _, err := obj.strList("authorization_servers")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadMetadata, err)
	}
	if len(servers) == 0 {
		return nil, ErrNoAuthServers
	}
	for i, s := range servers {
		if err := checkIssuerURL(s); err != nil {
			return nil, fmt.Errorf("authorization_servers[%d]: %w", i, err)
		}
	}
	scopes, _, err := obj.strList("scopes_supported")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadMetadata, err)
	}
	for _, s := range scopes {
		if !validScope(s) {
			return nil, fmt.Errorf("%w: scopes_supported contains the invalid scope %q", ErrBadMetadata, sanitize(s, 80))
		}
	}
	return &resourceMeta{Resource: res, AuthorizationServers: uniq(servers), ScopesSupported: uniq(scopes)}, nil
}

// checkIssuerURL checks an issuer identifier (RFC 8414 §2): an https URL
// (loopback may be http) with no query and no fragment.
func checkIssuerURL(s string) error {
	if err := checkEndpointURL("issuer", s); err != nil {
		return err
	}
	if strings.Contains(s, "?") {
		return fmt.Errorf("%w: issuer %s has a query component", ErrBadMetadata, redactURL(s))
	}
	return nil
}

// chooseIssuer picks the authorization server (R3.7): the bound issuer if
// the binding is for this resource and the issuer is still listed;
// otherwise the only one listed; several and no binding to go by is an
// error that names them, since guessing could hand credentials to the wrong
// server.
func chooseIssuer(servers []string, bound *config.Binding, canonical string) (string, error) {
	if bound != nil && bound.Resource == canonical && slices.Contains(servers, bound.Issuer) {
		return bound.Issuer, nil
	}
	if len(servers) == 1 {
		return servers[0], nil
	}
	return "", fmt.Errorf("%w: the protected resource metadata lists %d authorization servers (%s) and none is bound to this server yet; remotemcp does not guess. Choose one by setting \"binding\": {\"resource\": %q, \"issuer\": \"<one of them>\"} in the server's auth config",
		ErrSeveralAuthServers, len(servers), strings.Join(servers, ", "), canonical)
}

// validScope checks a scope-token of RFC 6749 §3.3.
func validScope(s string) bool {
	if s == "" || len(s) > 512 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

func uniq(l []string) []string {
	var out []string
	for _, s := range l {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func quoteList(l []string) string {
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, " or ")
}
