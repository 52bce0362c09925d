package gatewaypage

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/daemon"
	"github.com/remotemcp/remotemcp/gateway"
	"github.com/remotemcp/remotemcp/internal/oidctest"
	"github.com/remotemcp/remotemcp/localapi"
)

// A page that serves TLS itself (--tls-cert, --tls-key): people sign in
// over https, its cookies are Secure with the __Host- and __Secure-
// prefixes, the page's https Origin is its own, and plain http to its
// port gets no page.
func TestPageOverTLS(t *testing.T) {
	cert, key, roots := selfSigned(t)
	w := newWorld(t, func(w *world, o *daemon.Options) {
		o.TLSCert, o.TLSKey = cert, key
		w.roots = roots
	})
	if !strings.HasPrefix(w.page, "https://127.0.0.1:") {
		t.Fatalf("the page's URL is %s", w.page)
	}
	w.addPerson(t, oidctest.Alice.Email, "alice-files")
	b := w.browser(t)
	b.signIn(oidctest.Alice)
	checkCookies(t, b.setCookies(), map[string]string{
		"__Secure-remotemcp_signin": "Path=/oidc/; Max-Age=600; HttpOnly; Secure; SameSite=Lax",
		"__Host-remotemcp_gateway":  "Path=/; Max-Age=43200; HttpOnly; Secure; SameSite=Strict",
	})
	if got := b.serverIDs(); !slices.Equal(got, []string{"alice-files"}) {
		t.Errorf("Alice's servers over TLS: %v", got)
	}
	if st, body := b.do(http.MethodPost, "/api/host-tokens", localapi.HostTokenRequest{Name: "laptop"}); st != http.StatusCreated {
		t.Errorf("a state-changing request with the page's https Origin: %d %s", st, body)
	}
	plain := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := plain.Get("http" + strings.TrimPrefix(w.page, "https") + "/")
	if err == nil {
		body := readBody(t, resp)
		if resp.StatusCode != http.StatusBadRequest || strings.Contains(body, "alice") {
			t.Errorf("plain http to the TLS port: %s %s", resp.Status, body)
		}
	}
}

// A gateway's page listens beyond loopback only with people signing in,
// TLS (its own or a proxy's) and an https public URL; anything less is
// refused by New, saying what is missing.
func TestBeyondLoopbackNeeds(t *testing.T) {
	cert, key, _ := selfSigned(t)
	gw := gateway.New(gateway.Options{})
	oidc := func(public string) *daemon.SignIn {
		return &daemon.SignIn{OIDC: &daemon.OIDC{Issuer: "https://id.example", ClientID: "gw"}, PublicURL: public}
	}
	for _, c := range []struct {
		name string
		o    daemon.Options
		says string // "" for accepted
	}{
		{"no sign-in", daemon.Options{BehindProxy: true}, "needs people to sign in"},
		{"no TLS", daemon.Options{SignIn: oidc("https://gw.example")}, "needs TLS"},
		{"no public URL", daemon.Options{SignIn: oidc(""), BehindProxy: true}, "--public-url https://HOST"},
		{"an http public URL", daemon.Options{SignIn: oidc("http://gw.example"), BehindProxy: true}, "is https for browsers"},
		{"TLS with an http public URL", daemon.Options{SignIn: oidc("http://gw.example"), TLSCert: cert, TLSKey: key}, "is https for browsers"},
		{"a name, not an IP", daemon.Options{Addr: "gw.example:443", SignIn: oidc("https://gw.example"), BehindProxy: true}, "loopback IP address only"},
		{"behind a proxy", daemon.Options{SignIn: oidc("https://gw.example"), BehindProxy: true}, ""},
		{"with TLS", daemon.Options{SignIn: oidc("https://gw.example"), TLSCert: cert, TLSKey: key}, ""},
	} {
		o := c.o
		o.Gateway, o.DataDir = gw, t.TempDir()
		if o.Addr == "" {
			o.Addr = "0.0.0.0:0"
		}
		_, err := daemon.New(o)
		switch {
		case c.says == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.says != "" && (err == nil || !strings.Contains(err.Error(), c.says)):
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.says)
		}
	}
}

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key,
// and returns their paths and a pool that trusts it.
func selfSigned(t *testing.T) (cert, key string, roots *x509.CertPool) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gateway test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	roots = x509.NewCertPool()
	roots.AddCert(c)
	kb, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, key, roots
}
