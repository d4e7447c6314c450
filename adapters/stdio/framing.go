package stdio

import (
	"bufio"
	"errors"
	"io"
)

// lineReader splits a byte stream into newline-delimited frames without ever
// holding more than max bytes of one line: an oversize line is read past in
// chunks and reported, not buffered whole (docs/SPEC.md §4 "stdio framing").
type lineReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line without its newline. oversize reports a line
// longer than max, whose bytes were discarded. At the end of input it returns
// io.EOF (a last line without a newline is returned first).
func (l *lineReader) next() (line []byte, oversize bool, err error) {
	l.buf = l.buf[:0]
	for {
		chunk, err := l.r.ReadSlice('\n')
		if !oversize {
			n := len(chunk)
			if n > 0 && chunk[n-1] == '\n' {
				n--
			}
			if len(l.buf)+n > l.max {
				oversize = true
				l.buf = l.buf[:0]
			} else {
				l.buf = append(l.buf, chunk...)
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == nil:
			if oversize {
				return nil, true, nil
			}
			return l.buf[:len(l.buf)-1], false, nil
		case errors.Is(err, io.EOF):
			if oversize {
				return nil, true, nil
			}
			if len(l.buf) > 0 {
				return l.buf, false, nil
			}
			return nil, false, io.EOF
		default:
			return nil, false, err
		}
	}
}
