package remotemcp

import (
	"reflect"
	"testing"

	"github.com/remotemcp/remotemcp/engine"
)

// TestClientHasEveryEngineMethod (issue #21 item 1): the facade is thin
// and whole: Client has exactly the engine's exported methods, with the
// same signatures, and no exported fields.
func TestClientHasEveryEngineMethod(t *testing.T) {
	ct, et := reflect.TypeFor[*Client](), reflect.TypeFor[*engine.Engine]()
	for i := range et.NumMethod() {
		m := et.Method(i)
		cm, ok := ct.MethodByName(m.Name)
		if !ok {
			t.Errorf("Client lacks the engine's method %s %v", m.Name, m.Type)
			continue
		}
		// Drop the receivers before comparing.
		if got, want := sig(cm.Type), sig(m.Type); got != want {
			t.Errorf("Client.%s is %s, the engine's %s", m.Name, got, want)
		}
	}
	for i := range ct.NumMethod() {
		if _, ok := et.MethodByName(ct.Method(i).Name); !ok {
			t.Errorf("Client.%s delegates to nothing in the engine", ct.Method(i).Name)
		}
	}
	for i := range ct.Elem().NumField() {
		if f := ct.Elem().Field(i); f.IsExported() {
			t.Errorf("Client exports the field %s", f.Name)
		}
	}
}

func sig(ft reflect.Type) string {
	var in, out []reflect.Type
	for i := 1; i < ft.NumIn(); i++ {
		in = append(in, ft.In(i))
	}
	for i := range ft.NumOut() {
		out = append(out, ft.Out(i))
	}
	return reflect.FuncOf(in, out, ft.IsVariadic()).String()
}
