package toolsearch

// action says what a task or a tool does to the things it names. Tools
// that list, get or search are easily confused with tools that create,
// update or delete the same object ("show the open issues" against
// create_issue), and "restore the file I deleted" with delete_file; the
// verbs are the cheapest way to tell them apart.
type action int8

const (
	actUnknown action = iota
	actRead           // get, list, search, show, what…
	actWrite          // send, run, deploy, merge, …
	actCreate         // create, add, new, …
	actUpdate         // update, edit, set, move, …
	actDelete         // delete, remove, cancel, archive, …
	actRestore        // restore, roll back, undo, …
)

// intent is the coarse side of an action: reading or changing.
type intent int8

const (
	intentUnknown intent = iota
	intentRead
	intentWrite
)

func (a action) intent() intent {
	switch a {
	case actUnknown:
		return intentUnknown
	case actRead:
		return intentRead
	}
	return intentWrite
}

// Score factors for a tool whose action is known and differs from the
// task's known action: reading against changing, and deleting against
// another change (or restoring against deleting).
const (
	intentMismatch = 0.6
	changeMismatch = 0.8
	createUpdate   = 0.9
)

// actionFactor scales a tool's score by how well its action fits the
// task's.
func actionFactor(task, tool action) float64 {
	switch {
	case task == actUnknown || tool == actUnknown || task == tool:
		return 1
	case task.intent() != tool.intent():
		return intentMismatch
	case task == actDelete || tool == actDelete || task == actRestore || tool == actRestore:
		return changeMismatch
	case task == actCreate && tool == actUpdate || task == actUpdate && tool == actCreate:
		return createUpdate
	}
	return 1
}

// Verbs by action. They classify the first verb of a tool name and the
// first word of a task. Words that can go either way ("save", "export")
// are in no list. Question words make a task a read.
var (
	readVerbs = stemSet(`get list search find query fetch read retrieve show describe lookup look
		explain analyze check view count whoami browse preview inspect aggregate sample see
		display enumerate locate review investigate diagnose troubleshoot compare summarize
		chart graph plot
		what which who whom whose when where why how is are was were do does did any`)
	writeVerbs = stemSet(`create add new make update edit modify set post send
		reply forward merge run rerun trigger deploy promote move assign transition
		link upload push fork star mute submit approve dismiss mark apply adjust buy grant
		respond invite pin finalize refund duplicate copy rename share append insert
		execute vacuum manage declare log book open file ship fulfill tag label put change write
		start acknowledge resolve close reopen comment give turn combine connect
		silence remind schedule draft reschedule decline accept publish release rotate
		enable disable install invite mention notify email message dm page break setup
		generate compose raise register attach associate split convert reassign escalate
		snooze complete finish bump increase decrease reduce lower rollout launch upgrade
		approve reject lock unlock note leave ping text announce prepare organize
		import sync configure reply answer cover swap override replace substitute`)
	deleteVerbs = stemSet(`delete remove archive purge cancel void revoke kill terminate stop
		abort trash erase destroy discard drop clear uninstall unpublish unshare wipe`)
	restoreVerbs = stemSet(`restore rollback revert undo undelete recover unarchive untrash`)
	createVerbs  = stemSet(`create add new make post upload fork duplicate copy append insert
		declare log book open file draft generate compose raise register setup write start
		attach note leave prepare import issue`)
	updateVerbs = stemSet(`update edit modify set move assign transition mark adjust apply rename
		change resolve close reopen acknowledge mute silence snooze pin star enable disable turn
		reschedule complete finish bump increase decrease reduce lower lock unlock configure
		reassign escalate manage promote tag label link connect associate combine merge correct
		replace substitute`)
)

// verbAction returns the action of a stemmed word used as a verb.
func verbAction(s string) action {
	switch {
	case restoreVerbs[s]:
		return actRestore
	case deleteVerbs[s]:
		return actDelete
	case readVerbs[s]:
		return actRead
	case createVerbs[s]:
		return actCreate
	case updateVerbs[s]:
		return actUpdate
	case writeVerbs[s]:
		return actWrite
	}
	return actUnknown
}

// same reports whether two actions are the same for the verbs of a task
// and a tool: any change matches a tool that sends, runs or deploys.
func (a action) same(b action) bool {
	return a == b || a.intent() == intentWrite && b.intent() == intentWrite &&
		(a == actWrite || b == actWrite) && a != actDelete && b != actDelete && a != actRestore && b != actRestore
}

func stemSet(s string) map[string]bool {
	m := map[string]bool{}
	for w := range setOf(s) {
		m[stem(w)] = true
	}
	return m
}

// toolVerb returns the action of a tool and the stem of the verb in its
// name, if any.
func toolVerb(name string) (action, string) {
	words := splitWords(truncate(name, MaxNameBytes), MaxNameBytes, false)
	if i := nameVerb(words); i >= 0 {
		s := stem(words[i])
		a := verbAction(s)
		if j := compoundVerb(words, i, a); j >= 0 {
			s = stem(words[j])
			a = verbAction(s)
		}
		return a, s
	}
	return actUnknown, ""
}

// compoundVerb returns the position of the verb that a compound verb
// starting with words[i], whose action is a, really does, or -1: "find and
// replace", "find_replace", "search and update" change things, though
// their first verb reads. "get_or_create" reads: it gets if it can.
func compoundVerb(words []string, i int, a action) int {
	if a.intent() == intentWrite {
		return -1
	}
	j := i + 1
	if j >= len(words) {
		return -1
	}
	// Without a conjunction only a few verbs are taken as the second
	// half: in "list_tags" and "get_comments" the word is a noun.
	conj := conjunctions[words[j]]
	if conj {
		j++
	}
	if j < len(words) && (conj || pairedVerbs[words[j]]) && verbAction(stem(words[j])).intent() == intentWrite {
		return j
	}
	return -1
}

var (
	conjunctions = setOf(`and n then`)
	pairedVerbs  = setOf(`replace substitute`)
)

// nameVerb returns the position of the first verb in the words of a tool
// name, or -1.
func nameVerb(words []string) int {
	for i, w := range words {
		if stopwords[w] && w != "get" {
			continue
		}
		if s := stem(w); s == "get" || verbAction(s) != actUnknown {
			return i
		}
	}
	return -1
}

// leadIn are words that may come before the verb of a task: "please can
// you", "I want to", "let's".
var leadIn = setOf(`please can could would will you i we want need to let lets us help me go ahead and
	just quickly hey ok okay so now then first also kindly try like gonna wanna should must`)

// queryAction classifies a task by its first word after any lead-in.
func queryAction(words []string) action {
	words = skipHowTo(words)
	for i, w := range words {
		if leadIn[w] {
			continue
		}
		next := ""
		if i+1 < len(words) {
			next = words[i+1]
		}
		switch w {
		case "tell": // "tell me why" reads, "tell the team" writes
			if next == "me" || next == "us" {
				return actRead
			}
			return actWrite
		case "open": // "open a ticket" creates, "open the doc" reads
			if next == "a" || next == "an" || next == "new" {
				return actCreate
			}
			return actRead
		}
		a := verbAction(stem(w))
		if j := compoundVerb(words, i, a); j >= 0 {
			return verbAction(stem(words[j]))
		}
		return a
	}
	return actUnknown
}

// howTo are openings that ask how to do something, which is a request to
// do it: "how do I cancel…", "is there a way to merge…".
var howTo = [][]string{
	{"how", "do", "i"}, {"how", "do", "we"}, {"how", "can", "i"}, {"how", "can", "we"},
	{"how", "should", "i"}, {"how", "would", "i"}, {"how", "to"},
	{"is", "there", "a", "way", "to"}, {"is", "it", "possible", "to"}, {"what", "is", "the", "way", "to"},
}

// skipHowTo drops a how-to opening from the words of a task.
func skipHowTo(words []string) []string {
	for _, h := range howTo {
		if len(words) > len(h) && equalWords(words[:len(h)], h) {
			return words[len(h):]
		}
	}
	return words
}

func equalWords(a, b []string) bool {
	for i := range b {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
