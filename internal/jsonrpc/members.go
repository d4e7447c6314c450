package jsonrpc

import "bytes"

// Member is one member of a JSON object: its decoded name and the raw bytes
// of its value (a slice of the text it was read from, not a copy).
type Member struct {
	Name  string
	Value []byte
}

// CheckedMembers reads a whole frame that nobody has validated yet: it
// checks that obj is exactly one JSON object, with optional whitespace
// around it (Valid's rules), while it collects the object's members,
// appended to buf in order, so a frame is read once. dup is true when a
// name appears more than once (every member is still returned); ok is
// false when obj is not JSON, or not an object.
func CheckedMembers(obj []byte, buf []Member) (out []Member, dup, ok bool) {
	i := SkipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return buf, false, false
	}
	i = SkipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return buf, false, SkipSpace(obj, i+1) == len(obj)
	}
	start := len(buf)
	var names nameSet
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
		if names.seen(buf[start:], name) {
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

// Members returns the members of the JSON object obj (valid JSON whose first
// non-space byte is '{'; nil for anything else), appended to buf in order.
// dup is true when a name appears more than once; every member is still
// returned.
func Members(obj []byte, buf []Member) (out []Member, dup bool) {
	out, _, dup, _ = MembersAt(obj, SkipSpace(obj, 0), buf, "", nil)
	return out, dup
}

// MembersAt reads the object at obj[i] (valid JSON) as Members does, and
// returns the index just past it. When nested is set and the first member
// named nestedName has an object for its value, that object's members are
// appended to *nested in the same walk (nestedDup: a duplicate among
// them), so that value is read once, not skipped and then read again (the
// engine reads a request's params and their _meta so).
func MembersAt(obj []byte, i int, buf []Member, nestedName string, nested *[]Member) (out []Member, end int, dup, nestedDup bool) {
	if i >= len(obj) || obj[i] != '{' {
		return buf, i, false, false
	}
	i = SkipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return buf, i + 1, false, false
	}
	start := len(buf)
	var names nameSet
	for i < len(obj) {
		end := skipString(obj, i)
		name := Unquote(obj[i:end])
		i = SkipSpace(obj, end)
		i = SkipSpace(obj, i+1) // the ':'
		var vend int
		if nested != nil && name == nestedName && i < len(obj) && obj[i] == '{' {
			*nested, vend, nestedDup, _ = MembersAt(obj, i, *nested, "", nil)
		} else {
			vend = skipValue(obj, i)
		}
		if name == nestedName {
			nested = nil // only the first
		}
		if names.seen(buf[start:], name) {
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

// smallObject is how many members an object's duplicate check compares
// one by one; past it the names go into a set, so the check stays linear
// in the member count however large a body's object is (one of a hundred
// thousand members once took 16 s of quadratic comparisons).
const smallObject = 16

// nameSet answers whether a member name appeared before in one object: a
// scan of the members read so far while they are few (no allocation on
// the hot path), a set of their names past smallObject.
type nameSet struct {
	set map[string]struct{}
}

// seen reports whether name is among prev (the object's members read so
// far, those this set was asked about, in order), and records it.
func (s *nameSet) seen(prev []Member, name string) bool {
	if s.set == nil {
		if len(prev) < smallObject {
			_, found := Lookup(prev, name)
			return found
		}
		s.set = make(map[string]struct{}, 2*len(prev))
		for _, m := range prev {
			s.set[m.Name] = struct{}{}
		}
	}
	if _, found := s.set[name]; found {
		return true
	}
	s.set[name] = struct{}{}
	return false
}

// Lookup returns the value of the first member named name.
func Lookup(ms []Member, name string) ([]byte, bool) {
	for _, m := range ms {
		if m.Name == name {
			return m.Value, true
		}
	}
	return nil, false
}

// Elements returns the raw elements of the JSON array arr (valid JSON whose
// first non-space byte is '['; nil for anything else).
func Elements(arr []byte) [][]byte {
	i := SkipSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return nil
	}
	i = SkipSpace(arr, i+1)
	var out [][]byte
	for i < len(arr) && arr[i] != ']' {
		end := skipValue(arr, i)
		out = append(out, arr[i:end])
		i = SkipSpace(arr, end)
		if i < len(arr) && arr[i] == ',' {
			i = SkipSpace(arr, i+1)
		}
	}
	return out
}

// HasDuplicates reports whether any object in the JSON text b (valid JSON)
// names a member twice, at any depth: the check a decoder that keeps the
// last of two values (encoding/json) cannot make. One pass, linear in b.
func HasDuplicates(b []byte) bool {
	_, dup := duplicatesAt(b, SkipSpace(b, 0))
	return dup
}

// duplicatesAt walks the value at b[i] (valid JSON) and returns the index
// just past it, stopping early at the first duplicated name.
func duplicatesAt(b []byte, i int) (end int, dup bool) {
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
	var members []Member // names only
	var names nameSet
	i = SkipSpace(b, i+1)
	for i < len(b) && b[i] != closing {
		if closing == '}' {
			end := skipString(b, i)
			name := Unquote(b[i:end])
			if names.seen(members, name) {
				return i, true
			}
			members = append(members, Member{Name: name})
			i = SkipSpace(b, SkipSpace(b, end)+1) // past the ':'
		}
		if i, dup = duplicatesAt(b, i); dup {
			return i, true
		}
		i = SkipSpace(b, i)
		if i < len(b) && b[i] == ',' {
			i = SkipSpace(b, i+1)
		}
	}
	return i + 1, false
}

// skipString returns the index just past the string starting at b[i] ('"'):
// at the first quote not escaped, that is with an even run of backslashes
// before it. bytes.IndexByte finds the quotes a word at a time; a run
// never reaches back past i, which follows a quote.
func skipString(b []byte, i int) int {
	for i++; i < len(b); {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			break
		}
		j := i + q
		k := j
		for k > i && b[k-1] == '\\' {
			k--
		}
		if (j-k)%2 == 0 {
			return j + 1
		}
		i = j + 1
	}
	return len(b)
}

// skipValue returns the index just past the value starting at b[i] (valid
// JSON).
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	}
	for ; i < len(b); i++ {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return i
		}
	}
	return i
}
