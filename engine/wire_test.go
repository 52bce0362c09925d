package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/agent"
	"github.com/remotemcp/remotemcp/elicit"
	"github.com/remotemcp/remotemcp/hostperm"
	"github.com/remotemcp/remotemcp/localapi"
	"github.com/remotemcp/remotemcp/manager"
	"github.com/remotemcp/remotemcp/session"
)

// filler sets every exported field of a value to a distinct non-zero
// value, so that a field the wire type lacks, names differently, or a
// conversion forgets or swaps shows in the JSON.
type filler struct{ n int }

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
)

func (f *filler) fill(v reflect.Value) {
	f.n++
	switch {
	case v.Type() == timeType:
		// Not UTC: the types that write their times in UTC must agree.
		v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, f.n, time.FixedZone("X", 3600))))
		return
	case v.Type() == rawType:
		v.Set(reflect.ValueOf(json.RawMessage(fmt.Sprintf(`{"n":%d}`, f.n))))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", f.n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(f.n))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(f.n))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(f.n) + 0.5)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		f.fill(v.Elem())
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		f.fill(v.Index(0))
		f.fill(v.Index(1))
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		f.fill(k)
		f.fill(e)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				f.fill(v.Field(i))
			}
		}
	default:
		panic("filler: no value for " + v.Type().String())
	}
}

// full is a T with every field set.
func full[T any]() T {
	var v T
	(&filler{}).fill(reflect.ValueOf(&v).Elem())
	return v
}

// sameJSON checks that conv(v) encodes as v does, for each of vs, and
// that decoding those bytes into the wire type gives them back.
func sameJSON[L, W any](t *testing.T, conv func(L) W, vs ...L) {
	t.Helper()
	for i, v := range vs {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%T #%d: %v", v, i, err)
		}
		w := conv(v)
		got, err := json.Marshal(w)
		if err != nil {
			t.Fatalf("%T #%d: %v", w, i, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%T #%d encodes as\n%s\nbut %T as\n%s", w, i, got, v, want)
		}
		back := new(W)
		if err := json.Unmarshal(want, back); err != nil {
			t.Fatalf("%T #%d: decode: %v", w, i, err)
		}
		if again, _ := json.Marshal(*back); !bytes.Equal(again, want) {
			t.Errorf("%T #%d does not survive decoding:\n%s\nwant\n%s", w, i, again, want)
		}
	}
}

// TestWireJSON (guard): localapi's own wire types, which replaced aliases
// to agent, session and hostperm types (issue #21 item 5; ToolResult and
// ContextBlock last), encode what the engine converts from those types
// byte for byte as the library types did: for the zero value and for a
// value with every field set.
func TestWireJSON(t *testing.T) {
	t.Run("Grant", func(t *testing.T) { sameJSON(t, grantOf, hostperm.Grant{}, full[hostperm.Grant]()) })
	t.Run("Pending", func(t *testing.T) { sameJSON(t, pendingOf, hostperm.Pending{}, full[hostperm.Pending]()) })
	t.Run("LogEntry", func(t *testing.T) { sameJSON(t, logEntryOf, session.Exchange{}, full[session.Exchange]()) })
	t.Run("Prompt", func(t *testing.T) {
		sameJSON(t, promptOf, agent.PromptCommand{}, full[agent.PromptCommand](),
			agent.PromptCommand{Arguments: []agent.PromptArgument{}})
	})
	t.Run("PromptResult", func(t *testing.T) {
		sameJSON(t, promptResultOf, &agent.PromptResult{}, new(full[agent.PromptResult]()))
	})
	t.Run("Resource", func(t *testing.T) { sameJSON(t, resourceOf, agent.ResourceEntry{}, full[agent.ResourceEntry]()) })
	t.Run("ReadResult", func(t *testing.T) {
		sameJSON(t, readResultOf, &agent.ResourceResult{}, new(full[agent.ResourceResult]()))
	})
	t.Run("ContextBlock", func(t *testing.T) {
		sameJSON(t, blockOf, agent.ContextBlock{}, full[agent.ContextBlock](),
			agent.ContextBlock{Data: []byte{}, Truncated: &agent.Truncation{}})
	})
	t.Run("ToolResult", func(t *testing.T) {
		sameJSON(t, toolResultOf, &agent.ToolResult{}, new(full[agent.ToolResult]()),
			&agent.ToolResult{Content: []agent.ContextBlock{}, Notes: []string{}})
	})
	// A prompt's and a resource's blocks have no omitempty: none is
	// null, an empty list [].
	t.Run("PromptResult blocks", func(t *testing.T) {
		sameJSON(t, promptResultOf, &agent.PromptResult{Blocks: []agent.ContextBlock{}})
	})
	t.Run("ReadResult blocks", func(t *testing.T) {
		sameJSON(t, readResultOf, &agent.ResourceResult{Blocks: []agent.ContextBlock{}})
	})
	t.Run("ToolText", func(t *testing.T) { sameJSON(t, toolTextOf, nil, &agent.ToolText{}, new(full[agent.ToolText]())) })
	t.Run("Tool", func(t *testing.T) {
		at := full[agent.AgentTool]()
		at.Annotations = nil
		lt := toolOf(at)
		if lt.Own == nil || *lt.Own != localapi.ToolText(*at.Own) {
			t.Errorf("Own %+v, want %+v", lt.Own, at.Own)
		}
	})
	// The lists keep nil (the engine answers [] for none) and the error.
	t.Run("lists", func(t *testing.T) {
		errBroker := fmt.Errorf("broker")
		if g, err := grantsOf(nil, errBroker); g != nil || err != errBroker {
			t.Errorf("grantsOf(nil) = %v, %v", g, err)
		}
		if p, err := pendingsOf(nil, errBroker); p != nil || err != errBroker {
			t.Errorf("pendingsOf(nil) = %v, %v", p, err)
		}
		if l, err := logOf(nil, errBroker); l != nil || err != errBroker {
			t.Errorf("logOf(nil) = %v, %v", l, err)
		}
		gs := []hostperm.Grant{full[hostperm.Grant](), {}}
		sameJSON(t, func(v []hostperm.Grant) []localapi.Grant { g, _ := grantsOf(v, nil); return g }, gs, gs[:0])
		ps := []hostperm.Pending{full[hostperm.Pending](), {}}
		sameJSON(t, func(v []hostperm.Pending) []localapi.Pending { p, _ := pendingsOf(v, nil); return p }, ps, ps[:0])
		xs := []session.Exchange{full[session.Exchange](), {}}
		sameJSON(t, func(v []session.Exchange) []localapi.LogEntry { l, _ := logOf(v, nil); return l }, xs, xs[:0])
	})
}

// TestWireOldSpellings (guard): a pending approval or a log entry from a
// daemon older than the …At names (issue #19 item 10) reads into the
// wire type as it read into the library type.
func TestWireOldSpellings(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		// decode reads in into the library type and into the wire type.
		decode func(in []byte) (lib, wire any, err error)
	}{
		{"Pending", `{"origin":"https://a.example","purpose":"mcp","firstSeen":"2026-01-02T03:04:05Z","lastSeen":"2026-01-03T03:04:05Z","count":2}`,
			func(in []byte) (any, any, error) {
				var l hostperm.Pending
				var w localapi.Pending
				return &l, &w, errorsOf(json.Unmarshal(in, &l), json.Unmarshal(in, &w))
			}},
		{"LogEntry", `{"time":"2026-01-02T03:04:05Z","connectionId":"c1","httpMethod":"POST","ms":1.5}`,
			func(in []byte) (any, any, error) {
				var l session.Exchange
				var w localapi.LogEntry
				return &l, &w, errorsOf(json.Unmarshal(in, &l), json.Unmarshal(in, &w))
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lib, wire, err := tc.decode([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			want, _ := json.Marshal(lib)
			got, _ := json.Marshal(wire)
			if !bytes.Equal(got, want) || bytes.Contains(got, []byte(`"0001-01-01`)) {
				t.Errorf("read as %s, want %s (times kept)", got, want)
			}
		})
	}
}

func errorsOf(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// TestWireConstants (guard): localapi's typed constants name the values
// the libraries send: a Reason's class (ClassConfig is "configuration",
// which its documentation once called "config"), a request's purpose and
// a grant's user action, a tool's effects and retry policy, a call's
// outcome, a content block's kind, a card's status and kind, and the
// answers to a question.
func TestWireConstants(t *testing.T) {
	for _, tc := range []struct{ lib, wire string }{
		{string(manager.ClassConfig), string(localapi.ClassConfig)},
		{string(manager.ClassNetwork), string(localapi.ClassNetwork)},
		{string(manager.ClassTLS), string(localapi.ClassTLS)},
		{string(manager.ClassHTTP), string(localapi.ClassHTTP)},
		{string(manager.ClassAuth), string(localapi.ClassAuth)},
		{string(manager.ClassProtocol), string(localapi.ClassProtocol)},
		{string(manager.ClassTimeout), string(localapi.ClassTimeout)},
		{string(manager.ClassCanceled), string(localapi.ClassCanceled)},
		{string(manager.ClassPermission), string(localapi.ClassPermission)},
		{string(manager.ClassUnknown), string(localapi.ClassUnknown)},
		{string(hostperm.PurposeMCP), string(localapi.PurposeMCP)},
		{string(hostperm.PurposeDiscoveryPRM), string(localapi.PurposeDiscoveryPRM)},
		{string(hostperm.PurposeDiscoveryAS), string(localapi.PurposeDiscoveryAS)},
		{string(hostperm.PurposeRegistration), string(localapi.PurposeRegistration)},
		{string(hostperm.PurposeAuthorization), string(localapi.PurposeAuthorization)},
		{string(hostperm.PurposeToken), string(localapi.PurposeToken)},
		{hostperm.BySettingsPage, string(localapi.BySettingsPage)},
		{hostperm.ByCLI, string(localapi.ByCLI)},
		{hostperm.ByServersAdd, string(localapi.ByServersAdd)},
		{hostperm.ByPrompt, string(localapi.ByPrompt)},
		{string(agent.EffectsWrite), string(localapi.EffectsWrite)},
		{string(agent.EffectsRead), string(localapi.EffectsRead)},
		{string(agent.RetryNever), string(localapi.RetryNever)},
		{string(agent.OutcomeOK), string(localapi.OutcomeOK)},
		{string(agent.OutcomeDenied), string(localapi.OutcomeDenied)},
		{string(agent.OutcomeApprovalFailed), string(localapi.OutcomeApprovalFailed)},
		{string(agent.OutcomeInvalidArguments), string(localapi.OutcomeInvalidArguments)},
		{string(agent.OutcomeUnavailable), string(localapi.OutcomeUnavailable)},
		{string(agent.OutcomeCancelled), string(localapi.OutcomeCancelled)},
		{string(agent.OutcomeTimeout), string(localapi.OutcomeTimeout)},
		{string(agent.OutcomeFailed), string(localapi.OutcomeFailed)},
		{string(agent.OutcomeInterrupted), string(localapi.OutcomeInterrupted)},
		{string(agent.KindTool), string(localapi.BlockTool)},
		{string(agent.KindPrompt), string(localapi.BlockPrompt)},
		{string(agent.KindResource), string(localapi.BlockResource)},
		{string(elicit.StatusPending), string(localapi.CardPending)},
		{string(elicit.StatusAccepted), string(localapi.CardAccepted)},
		{string(elicit.StatusDeclined), string(localapi.CardDeclined)},
		{string(elicit.StatusCancelled), string(localapi.CardCancelled)},
		{string(elicit.StatusInterrupted), string(localapi.CardInterrupted)},
		{elicit.KindApproval, string(localapi.CardApproval)},
		{string(elicit.ActionAccept), string(localapi.ActionAccept)},
		{string(elicit.ActionDecline), string(localapi.ActionDecline)},
		{string(elicit.ActionCancel), string(localapi.ActionCancel)},
	} {
		if tc.lib != tc.wire {
			t.Errorf("localapi says %q where the library sends %q", tc.wire, tc.lib)
		}
	}
	if localapi.ClassConfig != "configuration" {
		t.Errorf("ClassConfig = %q: the JSON users see says configuration", localapi.ClassConfig)
	}
}
