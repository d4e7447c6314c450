package jsonrpc

import (
	"bufio"
	"errors"
	"io"
)

// LineReader splits a byte stream into newline-delimited frames without ever
// holding more than max bytes of one line (plus a CR): an oversize line is
// read past in chunks and reported, not buffered whole (docs/SPEC.md §4
// "stdio framing"). The bound counts the message, not its line ending: a
// CR before the LF is not part of it. It frames MCP's stdio transport and
// agentmcp's Unix socket: one JSON-RPC message per line.
type LineReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

// NewLineReader reads r through a 64 KiB buffer; max bounds a line in
// bytes.
func NewLineReader(r io.Reader, max int) *LineReader {
	return &LineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// Next returns the next line without its line ending. oversize reports a
// line longer than max, whose bytes were discarded. At the end of input it
// returns io.EOF (a last line without a newline is returned first). The
// line is valid until the next call.
func (l *LineReader) Next() (line []byte, oversize bool, err error) {
	l.buf = l.buf[:0]
	for {
		chunk, err := l.r.ReadSlice('\n')
		if !oversize {
			n := len(chunk)
			if n > 0 && chunk[n-1] == '\n' {
				n--
			}
			// One byte of slack for a CR that turns out to end the line.
			if len(l.buf)+n > l.max+1 {
				oversize = true
				l.buf = l.buf[:0]
			} else {
				l.buf = append(l.buf, chunk[:n]...)
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == nil || errors.Is(err, io.EOF):
			if err != nil && !oversize && len(l.buf) == 0 {
				return nil, false, io.EOF
			}
			if oversize {
				return nil, true, nil
			}
			if n := len(l.buf); n > 0 && l.buf[n-1] == '\r' {
				l.buf = l.buf[:n-1]
			}
			if len(l.buf) > l.max {
				return nil, true, nil
			}
			return l.buf, false, nil
		default:
			return nil, false, err
		}
	}
}
