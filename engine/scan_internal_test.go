package engine

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzCheckedMembers holds the validating walk to json.Valid: a frame is
// accepted exactly when it is valid JSON whose value is an object, and then
// its members are the object's, in order, with their exact values.
func FuzzCheckedMembers(f *testing.F) {
	for _, s := range []string{`{}`, ` { } `, `{"a":1}`, `{"a":1,}`, `{"a" 1}`, `{"a":1}x`, `{"a":[1,{"b":"\u00e9"}],"c":null}`, `{"a":"\x"}`, `{"jsonrpc":"2.0","id":2,"method":"ping"`, `{"a":1,"a":2}`, `[1]`, `"s"`, `{"a":tru}`, "{\"a\":\"\t\"}", `{"_meta":{"a":1,"b":{"c":[]}},"name":"x"}`, `{"_meta":{"a":1,"a":2}}`, `{"_meta":[],"_meta":{"a":1}}`, `{ "_meta" : { } , "x" : 1 }`, `{"\u005fmeta":{"k":"v"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ms, _, ok := checkedMembers(b, nil)
		want := json.Valid(b) && firstByte(b) == '{'
		if ok != want {
			t.Fatalf("checkedMembers(%q) ok = %v, want %v", b, ok, want)
		}
		if !ok {
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, mb := range ms {
			want, has := m[mb.name]
			if !has || !json.Valid(mb.value) {
				t.Fatalf("member %q = %q: not one of the object's, or not JSON", mb.name, mb.value)
			}
			seen[mb.name] = true
			_ = want // the last of duplicated names wins in m; each value is checked as JSON above
		}
		if len(seen) != len(m) {
			t.Fatalf("checkedMembers(%q) found %d names, the object has %d", b, len(seen), len(m))
		}
		checkNestedWalk(t, b, ms)
	})
}

// checkNestedWalk holds membersAt's one walk (an object's members, and
// those of its first _meta, at once) to two: members of the object, then of
// its first _meta when that is an object.
func checkNestedWalk(t *testing.T, b []byte, want []member) {
	var nested []member
	got, end, dup, nestedDup := membersAt(b, skipSpace(b, 0), nil, "_meta", &nested)
	_, wantDup := members(b, nil)
	if !reflect.DeepEqual(got, want) || dup != wantDup || skipSpace(b, end) != len(b) {
		t.Fatalf("membersAt(%q) = %q, end %d, dup %v; want %q, the end %d, dup %v", b, got, end, dup, want, len(b), wantDup)
	}
	var wantNested []member
	wantNestedDup := false
	if raw, ok := lookup(want, "_meta"); ok && isObject(raw) {
		wantNested, wantNestedDup = members(raw, nil)
	}
	if !reflect.DeepEqual(nested, wantNested) || nestedDup != wantNestedDup {
		t.Fatalf("membersAt(%q) _meta = %q, dup %v; want %q, dup %v", b, nested, nestedDup, wantNested, wantNestedDup)
	}
}

// TestEqualString: a name compared in place means what unquote decodes.
func TestEqualString(t *testing.T) {
	for _, c := range []struct {
		lit, s string
		want   bool
	}{
		{`"echo"`, "echo", true},
		{`"echo"`, "ech", false},
		{`"\u0065cho"`, "echo", true},
		{`"\u0065cho"`, `\u0065cho`, false},
		{`""`, "", true},
		{"\"\xffx\"", "\ufffdx", true},
		{"\"\xffx\"", "\xffx", false},
	} {
		if got := equalString([]byte(c.lit), c.s); got != c.want || got != (unquote([]byte(c.lit)) == c.s) {
			t.Errorf("equalString(%q, %q) = %v, want %v (as unquote decodes it)", c.lit, c.s, got, c.want)
		}
	}
}

// FuzzSkipString holds skipString to encoding/json: past any string's
// literal, whatever follows it, and whatever the string holds (quotes and
// backslashes included).
func FuzzSkipString(f *testing.F) {
	for _, s := range []string{"", "a", `"`, `\`, `\"`, `a\\`, "\\\\\"x", "é\"\\u"} {
		f.Add(s, `,"x":1}`)
	}
	f.Fuzz(func(t *testing.T, s, rest string) {
		lit, err := json.Marshal(s)
		if err != nil {
			t.Skip()
		}
		b := append(append([]byte{}, lit...), rest...)
		if got := skipString(b, 0); got != len(lit) {
			t.Fatalf("skipString(%q) = %d, want %d", b, got, len(lit))
		}
	})
}
