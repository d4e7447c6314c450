package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

// The parsers are held to encoding/json's reading of the same text, and the
// encoders to its writing of the same value (HTML escaping off), on any
// input. go test runs each target's seeds; scripts/fuzz.sh fuzzes them.

// FuzzValid holds Valid to json.Valid, ArrayLen to json.Valid and
// encoding/json's decoding into []json.RawMessage, and HasDuplicates (on
// valid text) to a reference built on encoding/json's token stream.
func FuzzValid(f *testing.F) {
	for _, s := range []string{``, ` `, `0`, `-0`, `01`, `1.`, `.5`, `1e`, `1e+5`, `-1.5E-3`, `"\u00e9\ud83d"`, `"\x"`, "\"a\tb\"", `[1,]`, `[,1]`, `{"a":1,}`, `{"a" 1}`, `{1:2}`, `[[[[]]]]`, `tru`, `true false`, `nul`, ` {"a" : [ true , null , "x" ] } `, "\"\xff\"", `"\u12"`, `{"a":{"b":[1,{"c":"d"}]}}`, strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
		`{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `[{"a":1},{"a":1}]`, `{"a":{"b":1,"b":2}}`, `{"a":[{"x":1,"y":{"x":2,"x":3}}]}`, `{"decision":"deny","decision":"allow_once"}`, "{\"\xff\":1,\"\xfe\":2}", `{"a\"b":1,"a\\\"b":2}`, `[]`, ` [ ] `, `[1]`, `[1,2] x`, `[{"a":[1,2]},"x",[3]]`, `[1 2]`, `[1,`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, want := Valid(b), json.Valid(b)
		if got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid = %v", b, got, want)
		}
		var elems []json.RawMessage
		isArray := want && FirstByte(b) == '[' && json.Unmarshal(b, &elems) == nil
		if n, ok := ArrayLen(b); ok != isArray || n != len(elems) {
			t.Fatalf("ArrayLen(%q) = %d, %v; want %d, %v", b, n, ok, len(elems), isArray)
		}
		if !got {
			return
		}
		if got, want := HasDuplicates(b), duplicatesByTokens(b); got != want {
			t.Fatalf("HasDuplicates(%q) = %v, want %v", b, got, want)
		}
	})
}

// duplicatesByTokens is HasDuplicates written on json.Decoder.Token: the
// reference the walker is held to.
func duplicatesByTokens(raw []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	type frame struct {
		object bool
		seen   map[string]bool
		key    bool // the next token of an object is a member name
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false // io.EOF: walked the whole text
		}
		if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].key {
			if name, ok := tok.(string); ok {
				top := stack[n-1]
				if top.seen[name] {
					return true
				}
				top.seen[name], top.key = true, false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, seen: map[string]bool{}, key: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A value ended: in an object, a member name comes next.
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].key = true
		}
	}
}

// FuzzCheckedMembers holds the validating walk to json.Valid: a frame is
// accepted exactly when it is valid JSON whose value is an object, and then
// its members are the object's, in order, with their exact values; the
// walks over valid text (Members, MembersAt) agree with it.
func FuzzCheckedMembers(f *testing.F) {
	for _, s := range []string{`{}`, ` { } `, `{"a":1}`, `{"a":1,}`, `{"a" 1}`, `{"a":1}x`, `{"a":[1,{"b":"\u00e9"}],"c":null}`, `{"a":"\x"}`, `{"jsonrpc":"2.0","id":2,"method":"ping"`, `{"a":1,"a":2}`, `[1]`, `"s"`, `{"a":tru}`, "{\"a\":\"\t\"}", `{"_meta":{"a":1,"b":{"c":[]}},"name":"x"}`, `{"_meta":{"a":1,"a":2}}`, `{"_meta":[],"_meta":{"a":1}}`, `{ "_meta" : { } , "x" : 1 }`, `{"\u005fmeta":{"k":"v"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ms, dup, ok := CheckedMembers(b, nil)
		want := json.Valid(b) && FirstByte(b) == '{'
		if ok != want {
			t.Fatalf("CheckedMembers(%q) ok = %v, want %v", b, ok, want)
		}
		if !ok {
			return
		}
		order := memberNames(t, b)
		if len(ms) != len(order) {
			t.Fatalf("CheckedMembers(%q) found %d members, the object has %d", b, len(ms), len(order))
		}
		seen := map[string]bool{}
		wantDup := false
		for k, mb := range ms {
			if v := mb.Value; mb.Name != order[k] || !json.Valid(v) || len(v) == 0 || SkipSpace(v, 0) != 0 || strings.ContainsRune(" \t\r\n", rune(v[len(v)-1])) {
				t.Fatalf("member %d = %q: %q: want the name %q and one JSON value without spaces around it", k, mb.Name, mb.Value, order[k])
			}
			wantDup = wantDup || seen[mb.Name]
			seen[mb.Name] = true
		}
		if dup != wantDup {
			t.Fatalf("CheckedMembers(%q) dup = %v, want %v", b, dup, wantDup)
		}
		checkNestedWalk(t, b, ms, dup)
	})
}

// memberNames lists the top-level member names of the object b (valid
// JSON), in order, as encoding/json's token stream decodes them.
func memberNames(t *testing.T, b []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	var names []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// checkNestedWalk holds MembersAt's one walk (an object's members, and
// those of its first _meta, at once) to two: Members of the object, then of
// its first _meta when that is an object.
func checkNestedWalk(t *testing.T, b []byte, want []Member, wantDup bool) {
	var nested []Member
	got, end, dup, nestedDup := MembersAt(b, SkipSpace(b, 0), nil, "_meta", &nested)
	plain, plainDup := Members(b, nil)
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(plain, want) || dup != wantDup || plainDup != wantDup || SkipSpace(b, end) != len(b) {
		t.Fatalf("MembersAt(%q) = %q, end %d, dup %v; Members = %q; want %q, the end %d, dup %v", b, got, end, dup, plain, want, len(b), wantDup)
	}
	var wantNested []Member
	wantNestedDup := false
	if raw, ok := Lookup(want, "_meta"); ok && IsObject(raw) {
		wantNested, wantNestedDup = Members(raw, nil)
	}
	if !reflect.DeepEqual(nested, wantNested) || nestedDup != wantNestedDup {
		t.Fatalf("MembersAt(%q) _meta = %q, dup %v; want %q, dup %v", b, nested, nestedDup, wantNested, wantNestedDup)
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

// FuzzUnquote holds Unquote and EqualString to json.Unmarshal on any JSON
// string literal.
func FuzzUnquote(f *testing.F) {
	for _, s := range []string{`""`, `"method"`, `"\u006dethod"`, `"tools/call"`, `"a\nb"`, `"\ud83d\ude80"`, `"\ud83d"`, "\"\xff\"", "\"\xc3\"", `"\/"`, `"2026-07-28"`, `"é"`} {
		f.Add([]byte(s), "method")
	}
	f.Fuzz(func(t *testing.T, lit []byte, s string) {
		var want string
		if end, ok := scanString(lit, 0); !IsString(lit) || !ok || end != len(lit) {
			return // not one string literal alone: not Unquote's input
		}
		if err := json.Unmarshal(lit, &want); err != nil {
			t.Fatalf("json.Unmarshal(%q), a literal scanString accepts: %v", lit, err)
		}
		got := Unquote(lit)
		if got != want {
			t.Fatalf("Unquote(%q) = %q, json.Unmarshal = %q", lit, got, want)
		}
		if EqualString(lit, got) != true || EqualString(lit, s) != (want == s) {
			t.Fatalf("EqualString(%q, %q) disagrees with json.Unmarshal's %q", lit, s, want)
		}
	})
}

// marshal is encoding/json's rendering of v with HTML escaping off: the
// reference every encoder is held to.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// FuzzAppendString holds AppendString (from a string and from bytes) to
// encoding/json on any string, UTF-8 or not, after any prefix.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", `q"uote\back`, "\x00\x01\x1f\x7f", "\b\f\n\r\t", "<a href='x'>&amp;</a>", "line\u2028sep\u2029", "bad\xff\xfeutf8", "\uFFFD kept", "é ü ✓ 🚀", "\xe2\x80", "\xed\xa0\x80"} {
		f.Add("prefix", s)
	}
	f.Fuzz(func(t *testing.T, prefix, s string) {
		want, err := marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		want = append([]byte(prefix), want...)
		if got := AppendString([]byte(prefix), s); !bytes.Equal(got, want) {
			t.Fatalf("AppendString(%q) = %s, encoding/json = %s", s, got, want)
		}
		if got := AppendString([]byte(prefix), []byte(s)); !bytes.Equal(got, want) {
			t.Fatalf("AppendString([]byte(%q)) = %s, encoding/json = %s", s, got, want)
		}
	})
}

// FuzzAppendFloat holds AppendFloat to encoding/json on every finite
// float64 (any 64 bits).
func FuzzAppendFloat(f *testing.F) {
	for _, x := range []float64{0, math.Copysign(0, -1), 1, -1.5, 1e-6, 9.99e-7, 1e-7, 1e20, 1e21, -1e21, 123456789.125, 0.1, math.MaxFloat64, math.SmallestNonzeroFloat64, 5e-324, 1e-9} {
		f.Add(math.Float64bits(x))
	}
	f.Fuzz(func(t *testing.T, bits uint64) {
		x := math.Float64frombits(bits)
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return // JSON has no such number; the callers refuse them
		}
		want, err := marshal(x)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendFloat([]byte("x"), x); string(got) != "x"+string(want) {
			t.Fatalf("AppendFloat(%v) = %s, encoding/json = %s", x, got[1:], want)
		}
	})
}

// FuzzAppendRaw holds AppendRaw to encoding/json's rendering of the same
// json.RawMessage: the same text, or an error from both.
func FuzzAppendRaw(f *testing.F) {
	for _, s := range []string{`{"a":1}`, ` { "a" : [ 1 , "x y" , "\u00e9" ] } `, `"str with  spaces"`, "\n[true,\tnull]\n", `12.50`, `{`, `nope`, ``, `"\u2028<&>"`, "\"\xff\"", `[1,2] 3`, `{"a":"\"  \\"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		want, werr := marshal(json.RawMessage(raw))
		got, err := AppendRaw([]byte("x"), raw)
		if (werr == nil) != (err == nil) {
			t.Fatalf("AppendRaw(%q): err %v; encoding/json err %v", raw, err, werr)
		}
		if err != nil {
			if string(got) != "x" || !errors.Is(err, ErrInvalid) {
				t.Fatalf("AppendRaw(%q) failed with %v, leaving %q", raw, err, got)
			}
			return
		}
		if string(got) != "x"+string(want) {
			t.Fatalf("AppendRaw(%q) = %s, encoding/json = %s", raw, got[1:], want)
		}
	})
}
