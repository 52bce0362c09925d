package daemon

import (
	"net/http"
	"slices"
	"sync"
)

// routeMux is where the API's routes are registered: an http.ServeMux,
// or routeList, which only writes them down.
type routeMux interface {
	HandleFunc(pattern string, handler func(http.ResponseWriter, *http.Request))
}

// routeList records route patterns.
type routeList []string

func (l *routeList) HandleFunc(pattern string, _ func(http.ResponseWriter, *http.Request)) {
	*l = append(*l, pattern)
}

// APIRoutes lists the local API's routes ("METHOD /api/…" patterns, as
// http.ServeMux takes them), sorted: on a gateway, every one of them acts
// for the person the request names. The isolation test of the gateway
// tries each with another person's ids; a route added without a case
// there fails it.
func APIRoutes() []string {
	var l routeList
	(&api{}).register(&l)
	slices.Sort(l)
	return l
}

// routeMatcher knows the API's routes (APIRoutes) without their handlers.
var routeMatcher = sync.OnceValue(func() *http.ServeMux {
	mux := http.NewServeMux()
	for _, p := range APIRoutes() {
		if p != "/api/" { // the catch-all: no route of its own
			mux.HandleFunc(p, func(http.ResponseWriter, *http.Request) {})
		}
	}
	return mux
})

// isAPIRoute reports whether r is for one of the API's routes.
func isAPIRoute(r *http.Request) bool {
	_, pattern := routeMatcher().Handler(r)
	return pattern != ""
}
