// Package toolsearch ranks MCP tools for a task written in plain language,
// so that a host facing a catalog of hundreds of tools can be offered a
// search tool instead of all of them (issue #14).
//
// Ranking uses local data only: the server id, tool name, title,
// description and parameter names and descriptions. No network and no
// model are involved. Text is NFKC-folded, split on punctuation and on
// snake_case, kebab-case and camelCase boundaries, lower-cased, stripped of
// stopwords and lightly stemmed. Tools are scored with BM25F (BM25 over
// weighted fields: name, title, server id, parameter names, description,
// parameter descriptions), where the words of a name count by their role:
// its verb less, its head noun ("label" in create_issue_label) more.
//
// A task is read as concepts: its words, each with the words of general
// synonym tables ("ticket" for "issue", "meeting" for "event"), and things
// it implies (an email address means "email", "PROJ-42" an issue, "who
// changed" a history). Phrasal verbs are rewritten ("roll back", "get …
// back"). A concept scores by its best term in a tool, and a tool's score
// is scaled by the share of the task's concepts it matches. It is then
// adjusted by the task's action against the tool's (reading, creating,
// updating, deleting, restoring), by whether the tool's head noun and verb
// are the task's, by word pairs shared with the tool's name, and by the
// server the task names, if any.
//
// Every step is bounded (see the Max constants), so hostile catalogs and
// queries cost little.
package toolsearch

import (
	"math"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Limits that bound the work done for hostile input.
const (
	// MaxQueryBytes is how much of a query is read; the rest is ignored.
	MaxQueryBytes = 1000
	// MaxQueryTerms is how many terms of a query are used.
	MaxQueryTerms = 64
	// MaxNameBytes is how much of a tool's name and of its title is
	// indexed; MCP tool names are at most 128 characters.
	MaxNameBytes = 256
	// MaxFieldBytes is how much of each other document field is indexed:
	// the description, all parameter names together and all parameter
	// descriptions together.
	MaxFieldBytes = 4 << 10
	// MaxParams is how many parameters of a document are indexed.
	MaxParams = 64
)

// Param is one input parameter of a tool.
type Param struct {
	// Name is the parameter's property name in the input schema.
	Name string
	// Description is the parameter's description, if any.
	Description string
}

// Doc is one tool to be ranked.
type Doc struct {
	// Server is the id of the server offering the tool.
	Server string
	// Name is the tool's name as the server lists it.
	Name string
	// Title is the tool's human-readable title, if any.
	Title string
	// Description is the tool's description.
	Description string
	// Params are the tool's input parameters.
	Params []Param
}

// Result is one ranked tool.
type Result struct {
	// Doc is the position of the tool in the slice given to New.
	Doc int
	// Server is the tool's server id.
	Server string
	// Name is the tool's name.
	Name string
	// Score is the relevance score; higher is better, and it is only
	// comparable between results of the same search.
	Score float64
}

// Fields of a document, in the order of fieldWeight and fieldB.
const (
	fName = iota
	fTitle
	fServer
	fParamName
	fDescription
	fParamDesc
	numFields
)

// BM25F parameters: the weight of a term occurrence in each field, how much
// each field's length normalises term frequency, and the saturation k1.
var (
	fieldWeight = [numFields]float64{fName: 3, fTitle: 2, fServer: 2, fParamName: 1, fDescription: 1, fParamDesc: 0.5}
	fieldB      = [numFields]float64{fName: 0.3, fTitle: 0.3, fServer: 0, fParamName: 0.5, fDescription: 0.75, fParamDesc: 0.75}
)

const k1 = 1.2

// Weights of the words of a tool name (and title) by their role: the verb
// ("create"), the head noun naming the object ("issue" in
// create_issue_label is a modifier, "label" the head) and the rest; and of
// the words of quoted text of three words or more in a description, which
// is usually an example ('Lunch with Sam Friday 1pm').
const (
	roleVerb        = 0.6
	roleHead        = 1.4
	roleOther       = 1.0
	quotedDocWeight = 0.5
)

// Scoring of a search (see Search).
const (
	// synonymStack is how much the terms of a concept other than its
	// best-matching one count in a tool.
	synonymStack = 0.5
	// serverWordWeight is how much a word naming a server counts in the
	// text of other servers' tools; otherServer scales the score of those
	// tools.
	serverWordWeight = 0.5
	otherServer      = 0.5
	// headBonus is for a tool whose head noun the task names, which
	// pluralAgree raises when both are plural or both singular.
	headBonus   = 0.3
	pluralAgree = 0.6
	// verbBonus is for a tool whose verb is the task's verb (or a close
	// synonym); listVerbWeight is how much "list" counts as the task's
	// verb when the task reads a list.
	verbBonus      = 0.15
	listVerbWeight = 1.0
	// bigramBonus is for each of at most maxBigramBonus pairs of adjacent
	// task words adjacent in the tool's name or title.
	bigramBonus    = 0.25
	maxBigramBonus = 2
	// singleForList scales tools that get one thing when the task reads a
	// list.
	singleForList = 0.85
)

// posting is one document containing a term, with the term's saturated
// BM25F frequency tf/(k1+tf) precomputed.
type posting struct {
	doc int32
	w   float32
}

// Index ranks a fixed set of tools. It is immutable once built and safe for
// concurrent use.
type Index struct {
	servers  []string
	names    []string
	actions  []action
	verbs    []string // the stem of the verb of each tool's name
	postings map[string][]posting
	idf      map[string]float64
	// bigrams maps two adjacent terms of a tool's name or title, joined
	// by a space, to the tools that have them.
	bigrams map[string][]int32
	// scratch holds *scratch buffers for Search.
	scratch sync.Pool
	// heads maps the head noun of each tool's name (see nameTerms) to the
	// tools.
	heads map[string][]int32
	// headPlural says whether a tool's head noun is plural ("list_issues").
	headPlural []bool
}

// docTerms are the weighted term counts of one document by field, and the
// length of each field.
type docTerms struct {
	tf  map[string]*[numFields]float64
	len [numFields]float64
}

// New builds an index over docs. Results refer to tools by their position
// in docs.
func New(docs []Doc) *Index {
	ix := &Index{
		servers:    make([]string, len(docs)),
		names:      make([]string, len(docs)),
		actions:    make([]action, len(docs)),
		verbs:      make([]string, len(docs)),
		postings:   map[string][]posting{},
		idf:        map[string]float64{},
		bigrams:    map[string][]int32{},
		heads:      map[string][]int32{},
		headPlural: make([]bool, len(docs)),
	}
	all := make([]docTerms, len(docs))
	var total [numFields]float64
	for i, d := range docs {
		ix.servers[i], ix.names[i] = d.Server, d.Name
		ix.actions[i], ix.verbs[i] = toolVerb(d.Name)
		all[i] = ix.addDoc(int32(i), d)
		for f := range total {
			total[f] += all[i].len[f]
		}
	}
	var avg [numFields]float64
	for f := range avg {
		avg[f] = 1
		if len(docs) > 0 && total[f] > 0 {
			avg[f] = total[f] / float64(len(docs))
		}
	}
	for i, dt := range all {
		for t, c := range dt.tf {
			var tf float64
			for f := 0; f < numFields; f++ {
				if c[f] == 0 {
					continue
				}
				norm := 1 - fieldB[f] + fieldB[f]*dt.len[f]/avg[f]
				tf += fieldWeight[f] * c[f] / norm
			}
			ix.postings[t] = append(ix.postings[t], posting{doc: int32(i), w: float32(tf / (k1 + tf))})
		}
	}
	n := float64(len(docs))
	for t, ps := range ix.postings {
		df := float64(len(ps))
		ix.idf[t] = math.Log(1 + (n-df+0.5)/(df+0.5))
	}
	return ix
}

// addDoc indexes the head noun and name bigrams of document i and returns
// its term counts.
func (ix *Index) addDoc(i int32, d Doc) docTerms {
	dt := docTerms{tf: map[string]*[numFields]float64{}}
	serverWord := map[string]bool{}
	for _, t := range tokenize(truncate(d.Server, MaxNameBytes), MaxNameBytes, 0) {
		serverWord[t] = true
	}
	seenBigram := map[string]bool{}
	for f, text := range docFields(d) {
		var terms []string
		var weights []float64
		switch f {
		case fName, fTitle:
			var head string
			var plural bool
			terms, weights, head, plural = nameTerms(text)
			if f == fName && head != "" {
				ix.heads[head] = append(ix.heads[head], i)
				ix.headPlural[i] = plural
			}
			for k := 1; k < len(terms); k++ {
				a, b := terms[k-1], terms[k]
				if bg := a + " " + b; a != b && !serverWord[a] && !serverWord[b] && !seenBigram[bg] {
					seenBigram[bg] = true
					ix.bigrams[bg] = append(ix.bigrams[bg], i)
				}
			}
		case fServer:
			// Server ids are indexed apart: naming a product ("in
			// Jira") picks its server, not tools whose text happens
			// to use the word.
			terms, weights = textTerms(text)
			for k, t := range terms {
				terms[k] = serverPrefix + t
			}
		default:
			terms, weights = textTerms(text)
		}
		for k, t := range terms {
			c := dt.tf[t]
			if c == nil {
				c = new([numFields]float64)
				dt.tf[t] = c
			}
			c[f] += weights[k]
			dt.len[f]++
		}
	}
	return dt
}

// prepositions end the object of a tool name: "add_comment_to_issue" is
// about a comment.
var prepositions = setOf(`to for from in on by with using of into onto at as and or via`)

// genericHeads are words that end many tool names without naming the
// object ("get_issue_details"); the word before them is the head.
var genericHeads = setOf(`details detail info information data metadata id ids gid gids by name`)

// nameTerms returns the terms of a tool name or title and the weight of
// each by its role (see roleVerb). The verb is the first word that is one;
// the object is what follows it up to a preposition, or what precedes it
// when the verb comes last ("dns_record_create"); its last word is the
// head.
func nameTerms(text string) ([]string, []float64, string, bool) {
	words := joinCompounds(splitWords(text, MaxNameBytes, false))
	v := nameVerb(words)
	lo, hi := 0, len(words) // the object is words[lo:hi]
	switch {
	case v >= 0 && v == len(words)-1 && v > 0:
		hi = v
	case v >= 0:
		lo = v + 1
		for k := lo; k < len(words); k++ {
			if prepositions[words[k]] {
				hi = k
				break
			}
		}
	}
	head := -1
	for k := hi - 1; k >= lo; k-- {
		if stopwords[words[k]] || len(words[k]) < 2 {
			continue
		}
		if head < 0 {
			head = k
		}
		if !genericHeads[words[k]] {
			head = k
			break
		}
	}
	terms := make([]string, 0, len(words))
	weights := make([]float64, 0, len(words))
	headTerm, plural := "", false
	if head >= 0 {
		headTerm, plural = stem(words[head]), isPlural(words[head])
	}
	for k, w := range words {
		if stopwords[w] || len([]rune(w)) < 2 {
			continue
		}
		r := roleOther
		switch k {
		case v:
			r = roleVerb
		case head:
			r = roleHead
		}
		terms = append(terms, stem(w))
		weights = append(weights, r)
	}
	return terms, weights, headTerm, plural
}

// quotedInDoc matches quoted text in a description.
var quotedInDoc = regexp.MustCompile(`(?:^|[\s(:=])(?:'[^'\n]{1,200}'|"[^"\n]{1,200}")`)

// textTerms returns the terms of a description and their weights.
func textTerms(text string) ([]string, []float64) {
	var terms []string
	var weights []float64
	addPart := func(s string, w float64) {
		for _, t := range tokenize(s, MaxFieldBytes, 0) {
			terms = append(terms, t)
			weights = append(weights, w)
		}
	}
	last := 0
	var quotes [][]int
	if strings.ContainsAny(text, `'"`) {
		quotes = quotedInDoc.FindAllStringIndex(text, -1)
	}
	for _, m := range quotes {
		if len(strings.Fields(text[m[0]:m[1]])) < 3 {
			continue // a value such as 'blocks' says what the tool does
		}
		addPart(text[last:m[0]], 1)
		addPart(text[m[0]:m[1]], quotedDocWeight)
		last = m[1]
	}
	addPart(text[last:], 1)
	return terms, weights
}

// docFields returns the text of each field of d, each within MaxFieldBytes.
func docFields(d Doc) [numFields]string {
	var f [numFields]string
	f[fName] = truncate(d.Name, MaxNameBytes)
	f[fTitle] = truncate(d.Title, MaxNameBytes)
	f[fServer] = truncate(d.Server, MaxNameBytes)
	f[fDescription] = truncate(d.Description, MaxFieldBytes)
	var names, descs strings.Builder
	for i, p := range d.Params {
		if i >= MaxParams {
			break
		}
		if names.Len() < MaxFieldBytes {
			names.WriteString(truncate(p.Name, MaxFieldBytes))
			names.WriteString(" . ")
		}
		if descs.Len() < MaxFieldBytes {
			descs.WriteString(truncate(p.Description, MaxFieldBytes))
			descs.WriteString(" . ")
		}
	}
	f[fParamName] = truncate(names.String(), MaxFieldBytes)
	f[fParamDesc] = truncate(descs.String(), MaxFieldBytes)
	return f
}

// serverPrefix marks the terms of server ids in the index.
const serverPrefix = "@"

// scratch are the per-tool buffers of one Search.
type scratch struct {
	scores, best, sum, headw []float64
	matched                  []uint64
	bigrams                  []uint8
}

// getScratch returns zeroed buffers for a search.
func (ix *Index) getScratch() *scratch {
	if sc, ok := ix.scratch.Get().(*scratch); ok {
		clear(sc.scores)
		clear(sc.best)
		clear(sc.sum)
		clear(sc.headw)
		clear(sc.matched)
		clear(sc.bigrams)
		return sc
	}
	n := len(ix.names)
	return &scratch{
		scores: make([]float64, n), best: make([]float64, n), sum: make([]float64, n),
		headw: make([]float64, n), matched: make([]uint64, n), bigrams: make([]uint8, n),
	}
}

// Search returns up to k tools ranked for query, best first. Tools that
// share no term with the query are not returned. Ties are broken by server
// id, then tool name, then position, so the order is deterministic.
func (ix *Index) Search(query string, k int) []Result {
	if ix == nil || k <= 0 || len(ix.names) == 0 {
		return nil
	}
	pq := parseQuery(query)
	for _, n := range pq.names {
		// A capitalised word the catalog does not know, after "invite" or
		// "with", is probably a person.
		if t := stem(n); len(ix.postings[t]) == 0 && len(ix.postings[serverPrefix+t]) == 0 {
			pq.concept(stem("user"), entityWeight, false)
			break
		}
	}
	pq.finish()
	if len(pq.terms) == 0 {
		return nil
	}
	s := &search{ix: ix, pq: pq, scratch: ix.getScratch()}
	defer ix.scratch.Put(s.scratch)
	s.servers()
	cand := s.matchTerms()
	if len(cand) == 0 {
		return nil
	}
	s.matchNames()
	res := make([]Result, 0, min(k, len(cand)))
	for _, d := range cand {
		if sc := s.score(d); sc > 0 && !math.IsInf(sc, 0) && !math.IsNaN(sc) {
			res = pushTop(res, Result{Doc: int(d), Server: ix.servers[d], Name: ix.names[d], Score: sc}, k)
		}
	}
	sort.Slice(res, func(i, j int) bool { return less(res[i], res[j]) })
	return res
}

// search is the state of one Search.
type search struct {
	ix *Index
	pq *parsedQuery
	*scratch
	// onServer is set, when the query names servers, for their tools;
	// own[t] for the tools of the servers named by query term t.
	onServer []bool
	own      map[string][]bool
	listing  bool
}

// servers makes the words of the query that name a server search the
// server ids instead of the text of that server's tools (where "Datadog"
// says nothing about which Datadog tool is meant); they count less in the
// text of other servers' tools, and those tools count less.
func (s *search) servers() {
	pq := s.pq
	for i, n := 0, len(pq.terms); i < n; i++ {
		q := &pq.terms[i]
		ds := s.ix.postings[serverPrefix+q.term]
		if q.weight < 1 || len(ds) == 0 {
			continue
		}
		pq.terms = append(pq.terms, qterm{term: serverPrefix + q.term, weight: q.weight, concepts: q.concepts, group: q.group})
		q.weight *= serverWordWeight
		if s.onServer == nil {
			s.onServer = make([]bool, len(s.ix.names))
			s.own = map[string][]bool{}
		}
		o := make([]bool, len(s.ix.names))
		for _, p := range ds {
			s.onServer[p.doc], o[p.doc] = true, true
		}
		s.own[q.term] = o
	}
	sortTerms(pq.terms)
}

// matchTerms adds up the BM25F scores of the query's terms and returns the
// tools that match any. A concept scores by its best-matching term in each
// tool, plus a little for the others, so that a tool matching three
// synonyms of a word does not beat one matching the word itself.
func (s *search) matchTerms() []int32 {
	var cand, touched []int32
	flush := func() {
		for _, d := range touched {
			s.scores[d] += s.best[d] + synonymStack*(s.sum[d]-s.best[d])
			s.best[d], s.sum[d] = 0, 0
		}
		touched = touched[:0]
	}
	group := -1
	for _, q := range s.pq.terms {
		if q.group != group {
			flush()
			group = q.group
		}
		idf := s.ix.idf[q.term] * q.weight
		o := s.own[q.term]
		for _, p := range s.ix.postings[q.term] {
			if o != nil && o[p.doc] {
				continue
			}
			if s.matched[p.doc] == 0 {
				cand = append(cand, p.doc)
			}
			v := idf * float64(p.w)
			if s.sum[p.doc] == 0 {
				touched = append(touched, p.doc)
			}
			s.sum[p.doc] += v
			s.best[p.doc] = max(s.best[p.doc], v)
			s.matched[p.doc] |= q.concepts
		}
	}
	flush()
	return cand
}

// matchNames finds the tools whose name has a bigram of the query, and
// those whose head noun the query names, noting whether both are plural or
// both singular: "the open issues" wants list_issues, not get_issue.
func (s *search) matchNames() {
	pq := s.pq
	for _, b := range pq.bigrams {
		for _, d := range s.ix.bigrams[b] {
			if s.bigrams[d] < maxBigramBonus {
				s.bigrams[d]++
			}
		}
	}
	for _, q := range pq.terms {
		for _, d := range s.ix.heads[q.term] {
			w := q.weight
			if q.plural == s.ix.headPlural[d] {
				w *= 1 + pluralAgree
			}
			s.headw[d] = max(s.headw[d], w)
		}
	}
	s.listing = pq.listing && pq.action.intent() != intentWrite
	if s.listing {
		if pq.verbs == nil {
			pq.verbs = map[string]float64{}
		}
		pq.verbs["list"] = max(pq.verbs["list"], listVerbWeight)
	}
}

// score returns the final score of tool d.
func (s *search) score(d int32) float64 {
	ix, pq := s.ix, s.pq
	m := s.matched[d]
	if pq.verbConcept >= 0 && pq.action != actUnknown && pq.action.same(ix.actions[d]) {
		m |= 1 << pq.verbConcept
	}
	var share float64
	for c := 0; m != 0 && c < len(pq.conceptWeight); c++ {
		if m&(1<<c) != 0 {
			share += pq.conceptWeight[c]
			m &^= 1 << c
		}
	}
	// Scaled by the share of the task a tool matches, so that a tool
	// matching "cancel" and "appointment" through synonyms beats one
	// matching only "cancel" exactly.
	sc := s.scores[d] * share / pq.totalWeight
	sc *= actionFactor(pq.action, ix.actions[d])
	sc *= 1 + headBonus*s.headw[d]
	if v := ix.verbs[d]; v != "" {
		sc *= 1 + verbBonus*pq.verbs[v]
	}
	if s.listing && ix.actions[d] == actRead && !ix.headPlural[d] {
		sc *= singleForList
	}
	sc *= 1 + bigramBonus*float64(s.bigrams[d])
	if s.onServer != nil && !s.onServer[d] {
		sc *= otherServer
	}
	return sc
}

// pushTop adds r to h, a heap of the k best results so far whose root is
// the worst of them.
func pushTop(h []Result, r Result, k int) []Result {
	if len(h) < k {
		h = append(h, r)
		for i := len(h) - 1; i > 0; {
			p := (i - 1) / 2
			if !less(h[p], h[i]) {
				break
			}
			h[p], h[i] = h[i], h[p]
			i = p
		}
		return h
	}
	if !less(r, h[0]) {
		return h
	}
	h[0] = r
	for i := 0; ; {
		w, l, rt := i, 2*i+1, 2*i+2
		if l < len(h) && less(h[w], h[l]) {
			w = l
		}
		if rt < len(h) && less(h[w], h[rt]) {
			w = rt
		}
		if w == i {
			return h
		}
		h[i], h[w] = h[w], h[i]
		i = w
	}
}

// less orders results best first, then by server, name and position.
func less(a, b Result) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	if a.Server != b.Server {
		return a.Server < b.Server
	}
	if a.Name != b.Name {
		return a.Name < b.Name
	}
	return a.Doc < b.Doc
}
