package oauth

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/remotemcp/remotemcp/hostperm"
)

// asMetadataURLs lists where to look for an issuer's metadata, in the order
// of R3.8 (and of the go-sdk's auth.GetAuthServerMetadata, which cannot be
// reused as is: it accepts "plain"-only PKCE, compares issuers ignoring a
// trailing slash, and falls back to guessed endpoints).
//
// With a path: RFC 8414 path insertion, OIDC path insertion, OIDC path
// appending. Without: RFC 8414, then OIDC. A terminating "/" of the issuer
// is removed before insertion (RFC 8414 §3.1).
func asMetadataURLs(issuer string) ([]string, error) {
	u, err := url.Parse(issuer)
	if err != nil {
		return nil, err
	}
	origin := u.Scheme + "://" + u.Host
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	if path == "" {
		return []string{
			origin + "/.well-known/oauth-authorization-server",
			origin + "/.well-known/openid-configuration",
		}, nil
	}
	return []string{
		origin + "/.well-known/oauth-authorization-server" + path,
		origin + "/.well-known/openid-configuration" + path,
		origin + path + "/.well-known/openid-configuration",
	}, nil
}

// discoverAS fetches and validates the metadata of issuer (R3.8). Only a 4xx
// moves on to the next location. There is deliberately no fallback to
// guessed /authorize, /token and /register endpoints: the 2025-06-18 floor
// requires metadata, and guessing would send credentials to URLs nobody
// published.
func (a *Authenticator) discoverAS(ctx context.Context, serverID, issuer string) (*oauthex.AuthServerMeta, error) {
	ctx = withStep(hostperm.WithPurpose(ctx, hostperm.PurposeDiscoveryAS, serverID), StepDiscoveryAS)
	urls, err := asMetadataURLs(issuer)
	if err != nil {
		return nil, stepErr(StepDiscoveryAS, serverID, fmt.Errorf("%s: %w", issuer, err))
	}
	var tried []string
	for _, u := range urls {
		resp, err := a.getDoc(ctx, u)
		if err != nil {
			return nil, stepErr(StepDiscoveryAS, serverID, fmt.Errorf("%s: %w", issuer, err))
		}
		if isClientError(resp.status) {
			tried = append(tried, fmt.Sprintf("%s (%d)", redactURL(u), resp.status))
			continue
		}
		if resp.status != http.StatusOK {
			return nil, stepErr(StepDiscoveryAS, serverID, fmt.Errorf("%s: %w", issuer, statusError(http.MethodGet, u, resp.status)))
		}
		if err := checkJSONType(resp.header); err != nil {
			return nil, stepErr(StepDiscoveryAS, serverID, fmt.Errorf("%s: %s: %w", issuer, redactURL(u), err))
		}
		asm, err := validateASMetadata(resp.body, issuer)
		if err != nil {
			return nil, stepErr(StepDiscoveryAS, serverID, fmt.Errorf("%s: %w", issuer, err))
		}
		a.log.Debug("oauth: authorization server metadata found", "server", serverID, "url", redactURL(u))
		return asm, nil
	}
	return nil, stepErr(StepDiscoveryAS, serverID,
		fmt.Errorf("%s: %w: no authorization server metadata at %s", issuer, ErrNoMetadata, strings.Join(tried, ", ")))
}

// validateASMetadata parses RFC 8414 / OIDC discovery metadata and checks
// what MCP requires (R3.8): issuer identical to the issuer we asked for,
// byte for byte (no trailing-slash or case tolerance: RFC 8414 §3.3 and the
// conformance auth/iss-normalized scenario); authorization and token
// endpoints present and https (loopback may be http); a registration
// endpoint, when present, likewise; and "S256" listed in
// code_challenge_methods_supported, absent or plain-only being refused.
//
// Only the members remotemcp uses are type-checked, so an unrelated
// malformed member cannot break a working server.
//
// Long: one check per metadata member, in the order of the list above
// (issuer, endpoints, lists, flags, S256, response and grant types,
// scopes), over the one parsed object; most of its length is the two field
// tables.
func validateASMetadata(body []byte, issuer string) (*oauthex.AuthServerMeta, error) {
	obj, err := parseObject(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadMetadata, err)
	}
	var asm oauthex.AuthServerMeta
	bad := func(err error) error { return fmt.Errorf("%w: %v", ErrBadMetadata, err) }

	iss, ok, err := obj.str("issuer")
	if err != nil {
		return nil, bad(err)
	}
	if !ok {
		return nil, fmt.Errorf("%w: issuer is missing", ErrBadMetadata)
	}
	if iss != issuer {
		return nil, fmt.Errorf("%w: the metadata's issuer is %q, not %q", ErrIssuerMismatch, sanitize(iss, 200), issuer)
	}
	asm.Issuer = iss

	for _, f := range []struct {
		name     string
		dst      *string
		required bool
	}{
		{"authorization_endpoint", &asm.AuthorizationEndpoint, true},
		{"token_endpoint", &asm.TokenEndpoint, true},
		{"registration_endpoint", &asm.RegistrationEndpoint, false},
	} {
		v, ok, err := obj.str(f.name)
		if err != nil {
			return nil, bad(err)
		}
		if !ok && !f.required {
			continue
		}
		if err := checkEndpointURL(f.name, v); err != nil {
			return nil, err
		}
		*f.dst = v
	}

	for _, f := range []struct {
		name string
		dst  *[]string
	}{
		{"code_challenge_methods_supported", &asm.CodeChallengeMethodsSupported},
		{"scopes_supported", &asm.ScopesSupported},
		{"response_types_supported", &asm.ResponseTypesSupported},
		{"grant_types_supported", &asm.GrantTypesSupported},
		{"token_endpoint_auth_methods_supported", &asm.TokenEndpointAuthMethodsSupported},
	} {
		l, _, err := obj.strList(f.name)
		if err != nil {
			return nil, bad(err)
		}
		*f.dst = l
	}
	if asm.AuthorizationResponseIssParameterSupported, err = obj.boolean("authorization_response_iss_parameter_supported"); err != nil {
		return nil, bad(err)
	}
	// A malformed flag counts as "not supported" rather than failing the
	// document: it only matters when a CIMD URL is configured, and then
	// DCR or the configured client is the safe fallback (SPEC §9 A3).
	asm.ClientIDMetadataDocumentSupported, _ = obj.boolean("client_id_metadata_document_supported")

	switch {
	case !obj.has("code_challenge_methods_supported"):
		return nil, fmt.Errorf("code_challenge_methods_supported is absent, so it does not list S256; %w", ErrNoS256)
	case !slices.Contains(asm.CodeChallengeMethodsSupported, "S256"):
		listed := "it is an empty list"
		if len(asm.CodeChallengeMethodsSupported) > 0 {
			listed = "it lists " + sanitize(strings.Join(asm.CodeChallengeMethodsSupported, ", "), 120)
		}
		return nil, fmt.Errorf("code_challenge_methods_supported does not list S256 (%s); %w", listed, ErrNoS256)
	}
	if asm.ResponseTypesSupported != nil && !slices.Contains(asm.ResponseTypesSupported, "code") {
		return nil, fmt.Errorf("%w: response_types_supported does not list \"code\"", ErrBadMetadata)
	}
	if asm.GrantTypesSupported != nil && !slices.Contains(asm.GrantTypesSupported, "authorization_code") {
		return nil, fmt.Errorf("%w: grant_types_supported does not list \"authorization_code\"", ErrBadMetadata)
	}
	for _, s := range asm.ScopesSupported {
		if !validScope(s) {
			return nil, fmt.Errorf("%w: scopes_supported contains the invalid scope %q", ErrBadMetadata, sanitize(s, 80))
		}
	}
	return &asm, nil
}
