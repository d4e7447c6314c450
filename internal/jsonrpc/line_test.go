package jsonrpc

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestLineReader: lines without their endings (LF or CR LF), blank lines
// kept, a line over the bound reported and skipped whatever its size
// against the buffer, a CR counted only when it is not the line's ending,
// and a last line without a newline returned before io.EOF — also when the
// reader hands out one byte at a time.
func TestLineReader(t *testing.T) {
	type line struct {
		text     string
		oversize bool
	}
	long := strings.Repeat("x", 200<<10) // over bufio's 64 KiB buffer
	cases := []struct {
		name, in string
		max      int
		want     []line
	}{
		{"lf and crlf", "a\nbb\r\n\nccc", 8, []line{{"a", false}, {"bb", false}, {"", false}, {"ccc", false}}},
		{"at the bound", "12345\n12345\r\n123456\n", 5, []line{{"12345", false}, {"12345", false}, {"", true}}},
		{"a cr inside counts", "1234\r5\n1234\r\n", 5, []line{{"", true}, {"1234", false}}},
		{"oversize then more", long + "\n{}\n" + long, 1024, []line{{"", true}, {"{}", false}, {"", true}}},
		{"long within the bound", long + "\n", len(long), []line{{long, false}}},
		{"empty input", "", 8, nil},
	}
	for _, c := range cases {
		for _, oneByte := range []bool{false, true} {
			var r io.Reader = strings.NewReader(c.in)
			if oneByte {
				r = iotest.OneByteReader(r)
			}
			lr := NewLineReader(r, c.max)
			var got []line
			for {
				l, oversize, err := lr.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				got = append(got, line{string(l), oversize})
			}
			if len(got) != len(c.want) {
				t.Fatalf("%s (one byte at a time: %v): %d lines, want %d", c.name, oneByte, len(got), len(c.want))
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("%s (one byte at a time: %v): line %d = %.20q oversize %v, want %.20q oversize %v", c.name, oneByte, i, got[i].text, got[i].oversize, c.want[i].text, c.want[i].oversize)
				}
			}
		}
	}
}
