// Package record turns an MCP exchange seen on a stdio pass-through into a
// transcript (docs/SPEC.md §11, §12): the client's lines with the #wait
// steps that kept their order, the server's messages as the expected side,
// and no secret. `agentmcp record` is its command.
//
// What is written, and why:
//
//   - Before a client line, one "#wait ID" for every response (to a client
//     request) that arrived since the previous client line: the client had
//     seen it, so replaying waits for it too. Notifications are not waited
//     for (their count may vary with timing).
//   - A client's answer to a server-to-client request becomes "#answer
//     METHOD RESULT" or "#answer-error METHOD ERROR" (the server mints the
//     request's id). Its content keeps only the members the recorder is
//     told to keep (Options.Keep, by default "decision", the permission
//     dialog's field of docs/SPEC.md §6); every other member's value
//     becomes "REDACTED". The same holds for the inputResponses of a
//     modern retry.
//   - A requestState the server minted is written "{{requestState}}" in
//     the server section and "{{state ID}}" in client lines (ID the id of
//     the response that minted it, with the #wait that consumes it).
//   - Every occurrence of a secret becomes "REDACTED", in both sections:
//     Options.Secrets in any spelling (as they are, JSON-escaped once or
//     twice, or escaped any way a JSON string may be), "Bearer VALUE",
//     HTTP Basic credentials ("Basic " and base64 of user:password) and
//     the password of a URL's user information (scheme://user:PW@).
//   - A client request that got no response (a cancelled call) is written
//     "#absent ID" in the server section.
//   - Lines the format cannot hold verbatim (empty, starting with '#',
//     carrying a CR) are written as #raw; a line over MaxLine bytes is
//     forwarded but recorded as a comment saying its size.
package record

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// MaxLine is the longest line recorded; longer ones are forwarded only.
const MaxLine = 4 << 20

// Options says what a transcript keeps.
type Options struct {
	// Comment is the transcript's first paragraph (what was recorded).
	Comment string
	// Keep names the members of an elicitation answer's content whose
	// values are kept; nil means just "decision".
	Keep []string
	// Secrets are values replaced by "REDACTED" wherever they appear, in
	// any spelling (an API key, a token, a password); empty strings are
	// skipped.
	Secrets []string
	// Ignore are the ignore: paths written in the header.
	Ignore []string
	// AskClient writes the ask-client: on header (the server was started
	// with asking the client on), so that replaying over this repository's
	// carriers serves the same way.
	AskClient bool
}

// Recorder collects one exchange's lines in the order the pass-through
// saw them. It is safe for concurrent use.
type Recorder struct {
	mu     sync.Mutex
	events []event
}

type event struct {
	client bool
	line   []byte // nil: too long to record
	size   int
}

// Client records a line the client sent (without its newline).
func (r *Recorder) Client(line []byte) { r.add(true, line) }

// Server records a line the server wrote (without its newline).
func (r *Recorder) Server(line []byte) { r.add(false, line) }

// ClientSize records a client line too long to keep: its size only.
func (r *Recorder) ClientSize(n int) { r.addSize(true, n) }

// ServerSize records a server line too long to keep: its size only.
func (r *Recorder) ServerSize(n int) { r.addSize(false, n) }

func (r *Recorder) addSize(client bool, n int) {
	r.mu.Lock()
	r.events = append(r.events, event{client: client, size: n})
	r.mu.Unlock()
}

func (r *Recorder) add(client bool, line []byte) {
	e := event{client: client, size: len(line)}
	if len(line) <= MaxLine {
		e.line = bytes.Clone(line)
	}
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

// Copy forwards every line of src to dst, recording each with rec before
// it is forwarded (so that nothing the line causes can be recorded before
// it), until src ends; a last line without a newline is forwarded as it
// came. A line over MaxLine is forwarded as it arrives and recorded as its
// size only. It returns src's or dst's error, nil at src's end.
func Copy(dst io.Writer, src io.Reader, rec func([]byte), recSize func(int)) error {
	rd := bufio.NewReaderSize(src, 64<<10)
	var line []byte
	size, long := 0, false
	for {
		chunk, err := rd.ReadSlice('\n')
		size += len(chunk)
		if !long && size > MaxLine+1 {
			long = true
			if _, werr := dst.Write(line); werr != nil {
				return werr
			}
			line = line[:0]
		}
		if long {
			if _, werr := dst.Write(chunk); werr != nil {
				return werr
			}
		} else {
			line = append(line, chunk...)
		}
		ended := errors.Is(err, io.EOF)
		if err == nil || (ended && size > 0) {
			if long {
				recSize(size)
			} else {
				rec(bytes.TrimSuffix(line, []byte("\n")))
				if _, werr := dst.Write(line); werr != nil {
					return werr
				}
			}
			line, size, long = line[:0], 0, false
		}
		switch {
		case err == nil, errors.Is(err, bufio.ErrBufferFull):
		case ended:
			return nil
		default:
			return err
		}
	}
}

// message is what the recorder reads of one JSON-RPC message.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method *string         `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

func parse(line []byte) (message, bool) {
	var m message
	if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &m) != nil {
		return m, false
	}
	if len(m.ID) > 0 {
		var c bytes.Buffer
		if json.Compact(&c, m.ID) == nil {
			m.ID = c.Bytes()
		}
	}
	return m, true
}

func (m message) isResponse() bool {
	return len(m.ID) > 0 && string(m.ID) != "null" && m.Method == nil && (m.Result != nil || m.Error != nil)
}

func (m message) isRequest() bool { return len(m.ID) > 0 && m.Method != nil }

// Transcript writes the exchange as a transcript.
func (r *Recorder) Transcript(opts Options) []byte {
	r.mu.Lock()
	events := slices.Clone(r.events)
	r.mu.Unlock()
	keep := opts.Keep
	if keep == nil {
		keep = []string{"decision"}
	}
	redact := newRedactor(opts.Secrets).line

	// The tokens the server minted: token → (id, which response with
	// that id minted it, 1-based).
	type mint struct {
		id string
		n  int
	}
	minted := map[string]mint{}
	seen := map[string]int{}
	serverReq := map[string]string{} // server request id → method
	answered := map[string]bool{}    // client request ids with a response
	for _, e := range events {
		if e.client || e.line == nil {
			continue
		}
		m, ok := parse(e.line)
		if !ok {
			continue
		}
		if m.isRequest() {
			serverReq[string(m.ID)] = *m.Method
		}
		if m.isResponse() {
			seen[string(m.ID)]++
			answered[string(m.ID)] = true
			var v struct {
				RequestState *string `json:"requestState"`
			}
			if json.Unmarshal(m.Result, &v) == nil && v.RequestState != nil && *v.RequestState != "" {
				minted[*v.RequestState] = mint{string(m.ID), seen[string(m.ID)]}
			}
		}
	}
	mask := func(b []byte) []byte {
		for tok := range minted {
			b = bytes.ReplaceAll(b, []byte(strconv.Quote(tok)), []byte(`"{{requestState}}"`))
		}
		return b
	}

	var client, server strings.Builder
	waited := map[string]int{}
	var absent []string
	var pending []string // responses since the last client line
	for _, e := range events {
		if e.line == nil {
			if e.client {
				fmt.Fprintf(&client, "# (a line of %d bytes, not recorded)\n", e.size)
			} else {
				fmt.Fprintf(&server, "# (a message of %d bytes, not recorded)\n", e.size)
			}
			continue
		}
		m, ok := parse(e.line)
		if !e.client {
			if ok && m.isResponse() {
				pending = append(pending, string(m.ID))
			}
			if !ok {
				fmt.Fprintf(&server, "# not JSON-RPC, %d bytes\n", len(e.line))
				continue
			}
			server.Write(redact(mask(e.line)))
			server.WriteByte('\n')
			continue
		}
		for _, id := range pending {
			fmt.Fprintf(&client, "#wait %s\n", id)
			waited[id]++
		}
		pending = pending[:0]
		if ok && m.isResponse() {
			if method, isAnswer := serverReq[string(m.ID)]; isAnswer {
				kind, body := "answer", m.Result
				if m.Result == nil {
					kind, body = "answer-error", m.Error
				} else {
					body = keepContent(body, keep)
				}
				var c bytes.Buffer
				_ = json.Compact(&c, body)
				fmt.Fprintf(&client, "#%s %s %s\n", kind, method, redact(c.Bytes()))
				continue
			}
		}
		line := e.line
		if ok {
			line = redactInputResponses(line, keep)
			for tok, mt := range minted {
				q := []byte(strconv.Quote(tok))
				if !bytes.Contains(line, q) {
					continue
				}
				for waited[mt.id] < mt.n {
					fmt.Fprintf(&client, "#wait %s\n", mt.id)
					waited[mt.id]++
				}
				line = bytes.ReplaceAll(line, q, []byte(`"{{state `+mt.id+`}}"`))
			}
			if m.isRequest() && !answered[string(m.ID)] {
				absent = append(absent, string(m.ID))
			}
		}
		line = redact(line)
		if len(line) == 0 || line[0] == '#' || bytes.ContainsAny(line, "\r") || bytes.Contains(line, []byte("{{n}}")) {
			fmt.Fprintf(&client, "#raw %s\n", strconv.Quote(string(line)+"\n"))
			continue
		}
		client.Write(line)
		client.WriteByte('\n')
	}

	var b strings.Builder
	comment := strings.TrimSpace(opts.Comment)
	if comment == "" {
		comment = "Recorded by agentmcp record."
	}
	b.WriteString(comment + "\n")
	fmt.Fprintf(&b, "format: 1\n")
	if opts.AskClient {
		b.WriteString("ask-client: on\n")
	}
	if len(opts.Ignore) > 0 {
		fmt.Fprintf(&b, "ignore: %s\n", strings.Join(opts.Ignore, " "))
	}
	b.WriteString("-- client --\n")
	b.WriteString(client.String())
	b.WriteString("-- server --\n")
	for _, id := range absent {
		fmt.Fprintf(&b, "#absent %s\n", id)
	}
	b.WriteString(server.String())
	return []byte(b.String())
}

// keepContent returns an elicitation result with every content member not
// in keep replaced by "REDACTED".
func keepContent(result json.RawMessage, keep []string) json.RawMessage {
	var v map[string]json.RawMessage
	if json.Unmarshal(result, &v) != nil {
		return result
	}
	c, ok := v["content"]
	if !ok {
		return result
	}
	nc, changed := redactMembers(c, keep)
	if !changed {
		return result
	}
	v["content"] = nc
	out, err := json.Marshal(v)
	if err != nil {
		return result
	}
	return out
}

func redactMembers(obj json.RawMessage, keep []string) (json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(obj, &m) != nil {
		if string(bytes.TrimSpace(obj)) == "null" {
			return obj, false
		}
		return json.RawMessage(`"REDACTED"`), true
	}
	changed := false
	for k := range m {
		if !slices.Contains(keep, k) {
			m[k] = json.RawMessage(`"REDACTED"`)
			changed = true
		}
	}
	if !changed {
		return obj, false
	}
	out, _ := json.Marshal(m)
	return out, true
}

// redactInputResponses applies keepContent to every answer of a modern
// retry's params.inputResponses; the line is rewritten only if something
// was redacted.
func redactInputResponses(line []byte, keep []string) []byte {
	var v map[string]json.RawMessage
	if json.Unmarshal(line, &v) != nil {
		return line
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(v["params"], &params) != nil {
		return line
	}
	var responses map[string]json.RawMessage
	if json.Unmarshal(params["inputResponses"], &responses) != nil {
		return line
	}
	changed := false
	for k, resp := range responses {
		if nr := keepContent(resp, keep); !bytes.Equal(nr, resp) {
			responses[k] = nr
			changed = true
		}
	}
	if !changed {
		return line
	}
	params["inputResponses"], _ = json.Marshal(responses)
	v["params"], _ = json.Marshal(params)
	out, err := json.Marshal(v)
	if err != nil {
		return line
	}
	return out
}
