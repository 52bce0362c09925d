package toolsearch

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
)

// fixtureTool is a tool in testdata/tools.json, shaped like an MCP tools/list
// entry with the server id added.
type fixtureTool struct {
	Server      string `json:"server"`
	Name        string `json:"name"`
	Title       string `json:"title"`
	Description string `json:"description"`
	InputSchema struct {
		Properties map[string]struct {
			Description string `json:"description"`
		} `json:"properties"`
	} `json:"inputSchema"`
}

// fixtureQuery is a query in testdata/queries.json or
// testdata/queries-fresh.json with its expected tool.
type fixtureQuery struct {
	Query  string `json:"query"`
	Server string `json:"server"`
	Tool   string `json:"tool"`
	Split  string `json:"split"`
}

func readJSON(tb testing.TB, path string, v any) {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
}

// loadFixture returns the fixture tools and the queries of
// testdata/queries.json.
func loadFixture(tb testing.TB) ([]Doc, []fixtureQuery) {
	tb.Helper()
	var tools struct {
		Tools []fixtureTool `json:"tools"`
	}
	readJSON(tb, "testdata/tools.json", &tools)
	docs := make([]Doc, 0, len(tools.Tools))
	for _, t := range tools.Tools {
		d := Doc{Server: t.Server, Name: t.Name, Title: t.Title, Description: t.Description}
		names := make([]string, 0, len(t.InputSchema.Properties))
		for n := range t.InputSchema.Properties {
			names = append(names, n)
		}
		sort.Strings(names) // JSON object order is lost; keep the index deterministic
		for _, n := range names {
			d.Params = append(d.Params, Param{Name: n, Description: t.InputSchema.Properties[n].Description})
		}
		docs = append(docs, d)
	}
	return docs, loadQueries(tb, "testdata/queries.json")
}

func loadQueries(tb testing.TB, path string) []fixtureQuery {
	tb.Helper()
	var queries struct {
		Queries []fixtureQuery `json:"queries"`
	}
	readJSON(tb, path, &queries)
	return queries.Queries
}

// setStats accumulates the quality of one set of queries.
type setStats struct {
	name          string
	n, top1, top3 int
	rr            float64
	misses        []string
}

func (s *setStats) pct(x int) float64 {
	if s.n == 0 {
		return 0
	}
	return 100 * float64(x) / float64(s.n)
}

// add records the rank (1-based, 0 if not in the top 10) of the expected
// tool for q.
func (s *setStats) add(q fixtureQuery, rank int, res []Result) {
	s.n++
	if rank > 0 {
		s.rr += 1 / float64(rank)
	}
	if rank == 1 {
		s.top1++
	}
	if rank >= 1 && rank <= 3 {
		s.top3++
		return
	}
	var got []string
	for i, r := range res {
		if i == 3 {
			break
		}
		got = append(got, r.Server+"/"+r.Name)
	}
	r := "-"
	if rank > 0 {
		r = fmt.Sprint(rank)
	}
	s.misses = append(s.misses, fmt.Sprintf("%s: %q -> want %s/%s (rank %s), got %s",
		s.name, q.Query, q.Server, q.Tool, r, strings.Join(got, " ")))
}

// The goal of issue #14 is that the expected tool is in the top 3 for at
// least heldOutGoal % of held-out queries. heldOutFloor guards against
// regressions: the ranker reached 82.5 % on the first blind set
// (testdata/queries-fresh.json) before it was tuned on it.
const (
	heldOutGoal  = 90.0
	heldOutFloor = 80.0
)

// heldOutPath is the blind held-out set. It is written by someone who saw
// neither the ranker nor the tuning queries, and must not be tuned on:
// its misses are logged only with TOOLSEARCH_SHOW_HELDOUT=1.
const heldOutPath = "testdata/queries-blind2.json"

// TestSearchQuality runs the fixture queries and reports top-1, top-3 and
// MRR (over the top 10) for each set:
//
//   - tune: all 104 queries of testdata/queries.json, which ranking was
//     tuned on, and the halves they were first split into ("tune-half",
//     "heldout-half"), for the record.
//   - fresh: testdata/queries-fresh.json, the first blind set. Its misses
//     were looked at while tuning, so it is a tuning set now.
//   - blind2: testdata/queries-blind2.json, the held-out set, if it
//     exists. The test logs "GOAL MET" or "GOAL NOT MET" by whether at
//     least heldOutGoal % of its queries find their tool in the top 3,
//     and fails below heldOutFloor %.
//
// Misses of the tuning sets are logged. With TOOLSEARCH_TUNE_ONLY=1 the
// held-out set is not run at all.
func TestSearchQuality(t *testing.T) {
	docs, queries := loadFixture(t)
	servers := map[string]bool{}
	tools := map[string]bool{}
	for _, d := range docs {
		servers[d.Server] = true
		tools[d.Server+"/"+d.Name] = true
	}
	if len(docs) < 500 || len(servers) < 10 || len(queries) < 60 {
		t.Fatalf("fixture too small: %d tools on %d servers, %d queries", len(docs), len(servers), len(queries))
	}
	ix := New(docs)
	rank := func(q fixtureQuery) (int, []Result) {
		if !tools[q.Server+"/"+q.Tool] {
			t.Fatalf("query %q: expected tool %s/%s is not in the fixture", q.Query, q.Server, q.Tool)
		}
		res := ix.Search(q.Query, 10)
		for i, r := range res {
			if r.Server == q.Server && r.Name == q.Tool {
				return i + 1, res
			}
		}
		return 0, res
	}

	tune := &setStats{name: "tune"}
	halves := map[string]*setStats{"tune": {name: "tune-half"}, "heldout": {name: "heldout-half"}}
	for _, q := range queries {
		half := halves[q.Split]
		if half == nil {
			t.Fatalf("query %q: unknown split %q", q.Query, q.Split)
		}
		r, res := rank(q)
		tune.add(q, r, res)
		half.add(q, r, res)
	}
	fresh := &setStats{name: "fresh"}
	for _, q := range loadQueries(t, "testdata/queries-fresh.json") {
		r, res := rank(q)
		fresh.add(q, r, res)
	}
	if fresh.n < 50 {
		t.Fatalf("fresh set too small: %d queries", fresh.n)
	}
	sets := []*setStats{tune, halves["tune"], halves["heldout"], fresh}

	var held *setStats
	switch _, err := os.Stat(heldOutPath); {
	case os.Getenv("TOOLSEARCH_TUNE_ONLY") == "1":
		t.Log("TOOLSEARCH_TUNE_ONLY=1: held-out set not run")
	case err != nil:
		t.Logf("no held-out set: %v", err)
	default:
		held = &setStats{name: "blind2"}
		for _, q := range loadQueries(t, heldOutPath) {
			r, res := rank(q)
			held.add(q, r, res)
		}
		if held.n == 0 {
			t.Fatalf("%s has no queries", heldOutPath)
		}
		sets = append(sets, held)
	}

	t.Logf("%d tools on %d servers", len(docs), len(servers))
	t.Logf("%-13s %4s %7s %7s %6s", "set", "n", "top-1", "top-3", "MRR")
	for _, s := range sets {
		t.Logf("%-13s %4d %6.1f%% %6.1f%% %6.3f", s.name, s.n, s.pct(s.top1), s.pct(s.top3), s.rr/float64(max(s.n, 1)))
	}
	for _, s := range []*setStats{tune, fresh} {
		for _, m := range s.misses {
			t.Log("miss " + m)
		}
	}
	if held == nil {
		return
	}
	if os.Getenv("TOOLSEARCH_SHOW_HELDOUT") == "1" {
		for _, m := range held.misses {
			t.Log("miss " + m)
		}
	}
	p := held.pct(held.top3)
	if p >= heldOutGoal {
		t.Logf("GOAL MET: held-out top-3 %.1f %% >= %.0f %%", p, heldOutGoal)
	} else {
		t.Logf("GOAL NOT MET: held-out top-3 %.1f %% < %.0f %%", p, heldOutGoal)
	}
	if p < heldOutFloor {
		t.Errorf("held-out top-3 is %.1f%%, below the regression floor of %.0f%%", p, heldOutFloor)
	}
}
