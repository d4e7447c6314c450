package jsonrpc

import "testing"

// TestEqualString: a name compared in place means what Unquote decodes.
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
		if got := EqualString([]byte(c.lit), c.s); got != c.want || got != (Unquote([]byte(c.lit)) == c.s) {
			t.Errorf("EqualString(%q, %q) = %v, want %v (as Unquote decodes it)", c.lit, c.s, got, c.want)
		}
	}
}
