// Package redact hides secrets in free text (error messages, URLs) before
// it is logged or shown: bearer tokens and credential-like query or form
// parameters.
package redact

import "regexp"

// secretPatterns match a secret's prefix (kept) and its value (replaced).
var secretPatterns = regexp.MustCompile(`(?i)(bearer\s+|(?:access_token|refresh_token|id_token|client_secret|code_verifier|code|api_key|apikey|key|token|auth|password|sig|signature)=)[^\s&"',;)]+`)

// Text replaces bearer tokens and secret parameters in s with "[redacted]".
func Text(s string) string {
	return secretPatterns.ReplaceAllString(s, "${1}[redacted]")
}
