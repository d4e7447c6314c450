package jsonrpc

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"
	"time"
)

// The duplicate-member checks were quadratic in an object's member count
// (issue 32: one 0.8 MB body of a hundred thousand members cost 16-20 s of
// CPU); they are linear now (nameSet). The quadratic versions, as they
// were, stay here as the oracle the linear ones are fuzzed against.

func oldCheckedMembers(obj []byte, buf []Member) (out []Member, dup, ok bool) {
	i := SkipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return buf, false, false
	}
	i = SkipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return buf, false, SkipSpace(obj, i+1) == len(obj)
	}
	start := len(buf)
	for {
		if i >= len(obj) || obj[i] != '"' {
			return buf, dup, false
		}
		end, ok := scanString(obj, i)
		if !ok {
			return buf, dup, false
		}
		name := Unquote(obj[i:end])
		i = SkipSpace(obj, end)
		if i >= len(obj) || obj[i] != ':' {
			return buf, dup, false
		}
		i = SkipSpace(obj, i+1)
		vend, ok := scanValue(obj, i, 1)
		if !ok {
			return buf, dup, false
		}
		if _, seen := Lookup(buf[start:], name); seen {
			dup = true
		}
		buf = append(buf, Member{Name: name, Value: obj[i:vend]})
		i = SkipSpace(obj, vend)
		switch {
		case i >= len(obj):
			return buf, dup, false
		case obj[i] == '}':
			return buf, dup, SkipSpace(obj, i+1) == len(obj)
		case obj[i] != ',':
			return buf, dup, false
		}
		i = SkipSpace(obj, i+1)
	}
}

func oldMembersAt(obj []byte, i int, buf []Member, nestedName string, nested *[]Member) (out []Member, end int, dup, nestedDup bool) {
	if i >= len(obj) || obj[i] != '{' {
		return buf, i, false, false
	}
	i = SkipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return buf, i + 1, false, false
	}
	start := len(buf)
	for i < len(obj) {
		end := skipString(obj, i)
		name := Unquote(obj[i:end])
		i = SkipSpace(obj, end)
		i = SkipSpace(obj, i+1) // the ':'
		var vend int
		if nested != nil && name == nestedName && i < len(obj) && obj[i] == '{' {
			*nested, vend, nestedDup, _ = oldMembersAt(obj, i, *nested, "", nil)
		} else {
			vend = skipValue(obj, i)
		}
		if name == nestedName {
			nested = nil // only the first
		}
		if _, seen := Lookup(buf[start:], name); seen {
			dup = true
		}
		buf = append(buf, Member{Name: name, Value: obj[i:vend]})
		i = SkipSpace(obj, vend)
		if i >= len(obj) || obj[i] == '}' {
			break
		}
		i = SkipSpace(obj, i+1) // the ','
	}
	return buf, i + 1, dup, nestedDup
}

func oldDuplicatesAt(b []byte, i int) (end int, dup bool) {
	if i >= len(b) {
		return i, false
	}
	var closing byte
	switch b[i] {
	case '{':
		closing = '}'
	case '[':
		closing = ']'
	default:
		return skipValue(b, i), false
	}
	var names []string
	i = SkipSpace(b, i+1)
	for i < len(b) && b[i] != closing {
		if closing == '}' {
			end := skipString(b, i)
			name := Unquote(b[i:end])
			for _, n := range names {
				if n == name {
					return i, true
				}
			}
			names = append(names, name)
			i = SkipSpace(b, SkipSpace(b, end)+1) // past the ':'
		}
		if i, dup = oldDuplicatesAt(b, i); dup {
			return i, true
		}
		i = SkipSpace(b, i)
		if i < len(b) && b[i] == ',' {
			i = SkipSpace(b, i+1)
		}
	}
	return i + 1, false
}

// oldHasDuplicates is HasDuplicates as it was.
func oldHasDuplicates(b []byte) bool {
	_, dup := oldDuplicatesAt(b, SkipSpace(b, 0))
	return dup
}

// wideObject is an object of n members named k0, k1, ..., with the name
// at index dupAt (when in range) repeated as the last member.
func wideObject(n, dupAt int, nested bool) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		if nested && i == n/2 {
			fmt.Fprintf(&b, `"_meta":{"m%d":1,"m%d":2}`, i, i)
			continue
		}
		fmt.Fprintf(&b, `"k%d":%d`, i, i)
	}
	if dupAt >= 0 && dupAt < n {
		fmt.Fprintf(&b, `,"k%d":"again"`, dupAt)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// FuzzDuplicatesLinear holds the linear checks to the quadratic oracle:
// CheckedMembers on any text, Members, MembersAt (with a nested _meta)
// and HasDuplicates on valid JSON give the same answers and members.
func FuzzDuplicatesLinear(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `[{"a":1},{"a":1}]`, `{"_meta":{"x":1,"x":2},"y":3}`, `{"a":{"b":1,"b":2}}`} {
		f.Add([]byte(s))
	}
	for _, n := range []int{15, 16, 17, 40} {
		for _, at := range []int{-1, 0, n / 2, n - 1} {
			f.Add(wideObject(n, at, false))
			f.Add(wideObject(n, at, true))
			f.Add([]byte("[" + string(wideObject(n, at, true)) + "]"))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, gdup, gok := CheckedMembers(b, nil)
		want, wdup, wok := oldCheckedMembers(b, nil)
		if gdup != wdup || gok != wok || !reflect.DeepEqual(got, want) {
			t.Fatalf("CheckedMembers(%q) = %v, %v, %v; the oracle %v, %v, %v", b, got, gdup, gok, want, wdup, wok)
		}
		if !Valid(b) {
			return
		}
		if g, w := HasDuplicates(b), oldHasDuplicates(b); g != w {
			t.Fatalf("HasDuplicates(%q) = %v, the oracle %v", b, g, w)
		}
		if FirstByte(b) != '{' {
			return
		}
		var gn, wn []Member
		gm, gend, gd, gnd := MembersAt(b, SkipSpace(b, 0), nil, "_meta", &gn)
		wm, wend, wd, wnd := oldMembersAt(b, SkipSpace(b, 0), nil, "_meta", &wn)
		if gend != wend || gd != wd || gnd != wnd || !reflect.DeepEqual(gm, wm) || !reflect.DeepEqual(gn, wn) {
			t.Fatalf("MembersAt(%q) = %v %d %v %v / %v; the oracle %v %d %v %v / %v", b, gm, gend, gd, gnd, gn, wm, wend, wd, wnd, wn)
		}
	})
}

// TestDuplicateChecksAreLinear: on one object of 40,000 members (about
// 400 KB, a body the HTTP hosts accept) each check costs a small multiple
// of Valid's single pass over the same text, measured in the same run; the
// quadratic checks cost thousands of times as much. (A ratio to a peer in
// the same run, with a margin of ten, not a wall-clock bound.)
func TestDuplicateChecksAreLinear(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 400 KB object")
	}
	obj := wideObject(40000, -1, true)
	arr := []byte("[" + string(obj) + "]")
	fastest := func(f func()) time.Duration {
		best := time.Duration(1 << 62)
		for range 3 {
			start := time.Now()
			f()
			best = min(best, time.Since(start))
		}
		return best
	}
	valid := fastest(func() { Valid(obj) })
	var buf, nested []Member
	for name, check := range map[string]func(){
		"CheckedMembers": func() { buf, _, _ = CheckedMembers(obj, buf[:0]) },
		"MembersAt":      func() { buf, _, _, _ = MembersAt(obj, 0, buf[:0], "_meta", &nested) },
		"HasDuplicates":  func() { HasDuplicates(arr) },
	} {
		if d := fastest(check); d > 100*valid {
			t.Errorf("%s took %v on 40,000 members, %.0f× Valid's %v: not linear", name, d, float64(d)/float64(valid), valid)
		}
	}
}

// BenchmarkDuplicateChecks measures the checks per member on objects of
// growing width: linear, the ns/member stays flat.
func BenchmarkDuplicateChecks(b *testing.B) {
	for _, n := range []int{8, 64, 4096, 65536} {
		obj := wideObject(n, -1, false)
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			var buf []Member
			for b.Loop() {
				buf, _, _ = CheckedMembers(obj, buf[:0])
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/member")
		})
	}
}
