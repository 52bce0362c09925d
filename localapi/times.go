package localapi

import (
	"encoding/json"
	"time"
)

// MarshalJSON writes the notice with its time in UTC: a log message is
// stamped with the local clock when it arrives, and every time the local
// API shows is RFC 3339 UTC (issue #19 item 10).
func (n Notice) MarshalJSON() ([]byte, error) {
	type plain Notice
	p := plain(n)
	p.Time = p.Time.UTC()
	return json.Marshal(p)
}

// MarshalJSON writes the entry with its time in UTC: the clock of the
// process that recorded it is local, and every time the local API shows
// is RFC 3339 UTC under a name ending in "at" (issue #19 item 10).
func (x LogEntry) MarshalJSON() ([]byte, error) {
	type plain LogEntry
	p := plain(x)
	p.Time = p.Time.UTC()
	return json.Marshal(p)
}

// UnmarshalJSON reads an entry; one sent by a daemon older than the "at"
// name said "time".
func (x *LogEntry) UnmarshalJSON(b []byte) error {
	type plain LogEntry
	var v struct {
		plain
		OldTime *time.Time `json:"time"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	if v.Time.IsZero() && v.OldTime != nil {
		v.Time = *v.OldTime
	}
	*x = LogEntry(v.plain)
	return nil
}
