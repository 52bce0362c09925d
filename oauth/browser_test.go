package oauth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

// HeadlessBrowser refuses a redirect that does not go back to the
// redirect_uri of the request.
func TestHeadlessBrowserChecksRedirectTarget(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://evil.example.com/cb?code=x&state=s", http.StatusFound)
	}))
	defer srv.Close()
	_, err := HeadlessBrowser(nil)(context.Background(), srv.URL+"/authorize?state=s&redirect_uri="+RedirectURI(0))
	if !errors.Is(err, ErrBadCallback) {
		t.Fatalf("error %v", err)
	}
}
