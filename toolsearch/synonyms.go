package toolsearch

import (
	"strconv"
	"strings"
)

// synonymGroups lists words that people use interchangeably when asking for
// something done with a tool. It is general English and SaaS vocabulary,
// never the names of particular tools: a query word from a group also
// searches, at a lower weight, for the other words of its groups. Each
// line is one group; a line may start with the weight of its words
// ("0.8:"), else they count synonymWeight. Words are stemmed on load.
const synonymGroups = `
create new add make open setup declare raise compose book generate
add append insert attach
0.8: create add make write
0.8: get fetch retrieve read
0.8: search find lookup query
delete remove trash erase destroy discard cancel drop
cancel abort stop kill terminate halt
0.8: delete remove
update edit change modify alter reschedule mark set adjust correct
0.8: uptodate update sync refresh latest
0.8: outdated stale old
append end bottom
edit typo wording rename
0.8: unshare revoke
unshare permission access share
0.3: file document doc spreadsheet sheet presentation deck slides pdf
due deadline overdue
batch bulk multiple
0.8: reschedule postpone delay rebook
adjust increase decrease bump raise lower reduce restock
search find lookup locate query
list show view display browse enumerate see
restore recover undelete untrash undo revert rollback
0.8: restore recover undelete untrash
approve accept
reject decline deny refuse
message post send tell say notify announce chat ping text broadcast
0.8: message msg
email mail inbox
0.8: issue ticket
0.7: issue ticket bug defect
0.9: meeting event
0.8: meeting event appointment
meeting event appointment invite invitation standup call sync
attendee guest participant invitee user
reply respond answer response comment
comment note feedback remark annotation
0.8: repository repo
0.8: document doc
documentation manual guide reference help
page wiki article
article faq knowledge
deploy deployment rollout release publish ship launch
ship shipping shipment fulfill fulfillment dispatch deliver delivery tracking
customer client buyer shopper
user person people member teammate colleague coworker employee staff agent everyone everybody
team group squad
free available availability busy freebusy slot
permission access share sharing grant privilege role
review approve approval lgtm
release version tag
notification inbox mention unread
kanban board
blog announcement
shortcut alias
replace substitute swap
lock deadlock
extension plugin addon
sample preview peek example
replay recording
payout transfer withdrawal
balance funds money cash
location office home remote wfh
frame node layer component element
style theme typography
pipeline stage funnel
collection category catalog
document spec
alert monitor alarm fire
mute silence snooze suppress
status state stage progress health
unresolved outstanding pending active ongoing incomplete
priority urgency severity urgent
refund reimburse repay
dispute chargeback
invoice bill
payment charge transaction card
price pricing cost fee
discount coupon promo promotion voucher
stock inventory quantity
store shop storefront
product item sku merchandise listing
order purchase buy
subscription plan recurring
contact lead prospect
deal opportunity
company organization org business
owner rep salesperson
activity engagement interaction
spreadsheet sheet gsheet gsheets workbook
0.8: folder directory
0.8: copy duplicate clone
link associate association connect relate relation relationship
link url permalink
merge combine consolidate
0.8: database db
sql query statement
slow slowest latency performance
latest newest recent last
size big large disk storage
row record entry line entity
column field property attribute
section lane column
reminder remind nudge followup
vacation holiday ooo away autoreply responder pto
label tag category
attachment attach attached
download save
export convert
history changelog revision version audit
0.8: schema structure layout
marker annotation
child children descendant subpage nested
parent ancestor
channel room
thread conversation discussion
reaction emoji react thumb
secret credential password token apikey
leak leaked exposed
vulnerability vulnerable cve advisory security
dependency package library module
code source snippet implementation
sprint iteration cycle
assign assignee owner
worklog timesheet hour spent
oncall rota rotation duty shift pager
override cover swap substitute
incident outage sev down
maintenance downtime
metric timeseries chart graph plot statistic stats
cpu memory utilization usage load
host server machine instance node vm
domain hostname website site zone
bucket storage blob
worker function script serverless
firewall waf
environment env
variable var
macro canned template
rating satisfaction csat score
subtask step checklist split
0.8: todo task
count many number total
common frequent frequency often top popular
per breakdown aggregate aggregation grouped
slo objective target uptime sla reliability
0.3: today yesterday recent recently lately
stacktrace traceback backtrace
analyze analysis diagnose investigate troubleshoot debug
why reason cause
fix resolve solve
done complete finish close resolve
error exception crash failure fault problem broken
file readme
color colour hex
image picture png jpg svg icon photo
screenshot snapshot
mockup design wireframe prototype
ci workflow pipeline build
automation workflow
automatically automatic automate automation rule filter
rule filter
rerun retry
drive gdrive
whoami authenticated
star favorite bookmark
calendar agenda
filter criteria
`

// families lists words of one family that the light stemmer does not
// join ("notify", "notification"); they count almost as the word typed.
const families = `
notify notification
subscribe subscription subscriber
configure configuration config
assign assignee assignment
available availability
invite invitation invitee
connect connection
associate association
integrate integration
automate automation automatic automatically
attach attachment
announce announcement
mark marker
annotate annotation
schedule scheduled
resolve resolution
revise revision
depend dependency dependent
vulnerable vulnerability
remind reminder
respond response responder
replicate replication replica
migrate migration
analyze analysis analytics
approve approval
fulfill fulfillment
ship shipment shipping
pay payment
complete completion
transact transaction
verify verification
authenticate authentication authenticated
collaborate collaborator
participate participant
attend attendee attendance
follow follower
watch watcher
review reviewer
own owner
deploy deployment
create creation creator
delete deletion
define definition
escalate escalation
fail failure
slow slower slowest
big bigger biggest
large larger largest
new newer newest
old older oldest
recent recently
recur recurring recurrence
occur occurrence
price pricing
percent percentage
expire expiration expiry
renew renewal
cancel cancellation
rate rating
member membership
version versioning
permanent permanently
duplicate duplication
archive archival
restore restoration
reply replies
log logging
health healthy
due overdue
`

// familyWeight is how much a word of the same family counts.
const familyWeight = 0.9

// abbreviations expand a short form into the words tools spell out; unlike
// synonyms they count at full weight.
var abbreviations = map[string]string{
	"pr":         "pull request",
	"prs":        "pull request",
	"mr":         "pull request",
	"dm":         "direct message",
	"dms":        "direct message",
	"im":         "direct message",
	"kb":         "knowledge base",
	"msg":        "message",
	"gcal":       "google calendar",
	"gdoc":       "google document",
	"gdocs":      "google document",
	"config":     "configuration",
	"repo":       "repository",
	"repos":      "repository",
	"ooo":        "out office",
	"sso":        "single sign",
	"cdn":        "cache",
	"ack":        "acknowledge",
	"env":        "environment",
	"var":        "variable",
	"vars":       "variable",
	"db":         "database",
	"dbs":        "database",
	"csat":       "satisfaction",
	"slo":        "service level objective",
	"sev":        "severity",
	"prod":       "production",
	"perms":      "permission",
	"info":       "information",
	"qty":        "quantity",
	"txn":        "transaction",
	"txns":       "transaction",
	"acct":       "account",
	"org":        "organization",
	"orgs":       "organization",
	"app":        "application",
	"asap":       "urgent",
	"tz":         "timezone",
	"postgresql": "postgres",
	"psql":       "postgres",
	"gh":         "github",
	"cname":      "dns record",
}

// expansion is one extra query term implied by a query word.
type expansion struct {
	term   string
	weight float64
}

// synonymWeight is how much a synonym counts relative to the word typed.
const synonymWeight = 0.5

var expansions = buildExpansions()

func buildExpansions() map[string][]expansion {
	m := map[string][]expansion{}
	add := func(from, to string, w float64) {
		if from == to {
			return
		}
		for i, e := range m[from] {
			if e.term == to {
				if w > e.weight {
					m[from][i].weight = w
				}
				return
			}
		}
		m[from] = append(m[from], expansion{to, w})
	}
	groups := func(text string, weight float64) {
		for _, line := range strings.Split(text, "\n") {
			w := weight
			if i := strings.IndexByte(line, ':'); i > 0 {
				if f, err := strconv.ParseFloat(line[:i], 64); err == nil {
					w, line = f, line[i+1:]
				}
			}
			var terms []string
			for _, word := range strings.Fields(line) {
				terms = append(terms, stem(word))
			}
			for _, a := range terms {
				for _, b := range terms {
					add(a, b, w)
				}
			}
		}
	}
	groups(synonymGroups, synonymWeight)
	groups(families, familyWeight)
	for short, long := range abbreviations {
		for _, t := range tokenize(long, 1<<10, 0) {
			add(stem(short), t, 1)
		}
	}
	return m
}
