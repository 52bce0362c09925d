package localapi_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/localapi"
)

// Issue #19 item 10: every time the local API (and so every --json)
// shows is named "at" or "…At". The walk covers the types the API
// answers with and the types they alias.
func TestTimeFieldsEndInAt(t *testing.T) {
	roots := []any{
		localapi.Health{}, localapi.Server{}, localapi.AuthStatus{}, localapi.AuthFlow{}, localapi.LoginResult{},
		localapi.LogoutResult{}, localapi.Grant{}, localapi.Pending{}, localapi.GrantsState{}, localapi.Card{},
		localapi.Notice{}, localapi.LogEntry{}, localapi.LoginURL{}, localapi.ToolList{}, localapi.ToolResult{},
		localapi.Prompt{}, localapi.PromptResult{}, localapi.Resource{}, localapi.ReadResult{}, localapi.CallEvent{},
		localapi.ImportResult{}, localapi.UpdateServerResult{}, localapi.AddServerResult{},
	}
	timeType := reflect.TypeFor[time.Time]()
	seen := map[reflect.Type]bool{}
	var walk func(path string, ty reflect.Type)
	walk = func(path string, ty reflect.Type) {
		for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice || ty.Kind() == reflect.Array || ty.Kind() == reflect.Map {
			ty = ty.Elem()
		}
		if ty.Kind() != reflect.Struct || ty == timeType || seen[ty] {
			return
		}
		seen[ty] = true
		for f := range ty.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" || !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft == timeType && name != "at" && !strings.HasSuffix(name, "At") {
				t.Errorf("%s.%s: a time named %q, not …At", path, f.Name, name)
			}
			walk(path+"."+f.Name, f.Type)
		}
	}
	for _, r := range roots {
		ty := reflect.TypeOf(r)
		walk(ty.String(), ty)
	}
}

// The times stamped with the local clock (a request of the log, a server's
// log message) are written in UTC, RFC 3339.
func TestLocalTimesAreWrittenInUTC(t *testing.T) {
	at := time.Date(2025, 3, 4, 5, 6, 7, 0, time.FixedZone("CET", 3600))
	for _, v := range []any{localapi.LogEntry{Time: at}, localapi.Notice{Time: at}} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `"at":"2025-03-04T04:06:07Z"`) {
			t.Errorf("%T written as %s", v, b)
		}
	}
	var back localapi.LogEntry
	if err := json.Unmarshal([]byte(`{"time":"2025-03-04T04:06:07Z","httpMethod":"POST"}`), &back); err != nil || !back.Time.Equal(at) || back.HTTPMethod != "POST" {
		t.Errorf("an entry with the old name reads as %+v (%v)", back, err)
	}
}
