package jsonenc

import "testing"

func TestMarshalKeepsHTMLCharacters(t *testing.T) {
	got, err := Marshal(map[string]string{"d": "keep <these> & order"})
	if err != nil || string(got) != `{"d":"keep <these> & order"}` {
		t.Fatalf("Marshal = %s, %v", got, err)
	}
}
