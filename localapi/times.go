package localapi

import "encoding/json"

// MarshalJSON writes the notice with its time in UTC: a log message is
// stamped with the local clock when it arrives, and every time the local
// API shows is RFC 3339 UTC (issue #19 item 10).
func (n Notice) MarshalJSON() ([]byte, error) {
	type plain Notice
	p := plain(n)
	p.Time = p.Time.UTC()
	return json.Marshal(p)
}
