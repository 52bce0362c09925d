package session

import (
	"encoding/json"
	"time"
)

// MarshalJSON writes the exchange with its time in UTC: the clock of the
// process that recorded it is local, and every time the local API shows
// is RFC 3339 UTC under a name ending in "at" (issue #19 item 10).
func (x Exchange) MarshalJSON() ([]byte, error) {
	type plain Exchange
	p := plain(x)
	p.Time = p.Time.UTC()
	return json.Marshal(p)
}

// UnmarshalJSON reads an exchange; one written before the time was named
// "at" (by an older daemon) said "time".
func (x *Exchange) UnmarshalJSON(b []byte) error {
	type plain Exchange
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
	*x = Exchange(v.plain)
	return nil
}
