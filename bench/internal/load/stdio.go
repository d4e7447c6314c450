package load

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentmcp/agentmcp/bench/internal/wire"
	"github.com/agentmcp/agentmcp/internal/childpipe"
)

// StdioLoad drives one server process over its stdin and stdout, pipelined:
// up to Window requests in flight, answers taken in any order and matched to
// their requests by id.
type StdioLoad struct {
	cmd    *exec.Cmd
	stdin  *os.File
	stdout *os.File
	w      *bufio.Writer
	r      *bufio.Reader
	want   string
	window int
	sem    chan struct{} // one token per request in flight
	nextID int64         // only Run's goroutine

	slots []slot // request in flight by id&slotMask
	base  time.Time

	received atomic.Int64
	target   atomic.Int64  // requests of the current phase, once all are sent; else -1
	phaseEnd chan struct{} // the reader's signal that received reached target
	lat      []time.Duration

	failOnce   sync.Once
	failed     chan struct{}
	failErr    error
	closing    atomic.Bool
	reading    bool // the reader was started
	readerDone chan struct{}
}

type slot struct{ id, sent atomic.Int64 } // sent: ns since base + 1; 0 is free

const slotMask = 1<<16 - 1

// StartStdio starts argv as a child process with pipes for its stdin and
// stdout (its stderr goes to stderr), runs the initialize handshake
// (2025-11-25) and one tools/call, which fixes the text every later answer
// must carry (wire.Expect).
func StartStdio(argv []string, window int, stderr io.Writer) (*StdioLoad, error) {
	if window < 1 || window > slotMask/2 {
		return nil, fmt.Errorf("load: window %d out of range", window)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = stderr
	inW, outR, err := childpipe.Start(cmd)
	if err != nil {
		return nil, err
	}
	s := &StdioLoad{
		cmd: cmd, stdin: inW, stdout: outR,
		w: bufio.NewWriterSize(inW, 64<<10), r: bufio.NewReaderSize(outR, 64<<10),
		window: window, sem: make(chan struct{}, window),
		slots: make([]slot, slotMask+1), base: time.Now(),
		phaseEnd: make(chan struct{}, 1), failed: make(chan struct{}), readerDone: make(chan struct{}),
	}
	if err := s.handshake(); err != nil {
		s.Close()
		return nil, err
	}
	s.target.Store(-1)
	s.reading = true
	go s.read()
	return s, nil
}

// Pid is the server process's id.
func (s *StdioLoad) Pid() int { return s.cmd.Process.Pid }

// Want is the text every answer carries.
func (s *StdioLoad) Want() string { return s.want }

// handshake sends initialize (id 1), waits for its answer, sends
// initialized and makes the first call (id 2), one at a time.
func (s *StdioLoad) handshake() error {
	if err := s.send([]byte(wire.InitializeLine)); err != nil {
		return err
	}
	for {
		line, err := s.r.ReadSlice('\n')
		if err != nil {
			return fmt.Errorf("reading the initialize answer: %w", err)
		}
		var r struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(line, &r); err != nil {
			return fmt.Errorf("undecodable initialize answer: %v: %.200s", err, line)
		}
		if len(r.ID) == 0 {
			continue // a notification
		}
		if string(r.ID) != "1" || r.Error != nil || r.Result == nil {
			return fmt.Errorf("bad initialize answer: %.200s", line)
		}
		break
	}
	if err := s.send([]byte(wire.InitializedLine)); err != nil {
		return err
	}
	if err := s.send(wire.AppendCall(nil, 2, false)); err != nil {
		return err
	}
	for {
		line, err := s.r.ReadSlice('\n')
		if err != nil {
			return fmt.Errorf("reading the first answer: %w", err)
		}
		text, err := wire.CallText(line, 2)
		if errors.Is(err, wire.ErrNotResponse) {
			continue
		}
		if err != nil {
			return fmt.Errorf("first call: %w", err)
		}
		s.want, err = wire.Expect(text)
		s.nextID = 3
		return err
	}
}

func (s *StdioLoad) send(line []byte) error {
	if _, err := s.w.Write(line); err != nil {
		return err
	}
	if err := s.w.WriteByte('\n'); err != nil {
		return err
	}
	return s.w.Flush()
}

func (s *StdioLoad) fail(err error) {
	s.failOnce.Do(func() { s.failErr = err; close(s.failed) })
}

func (s *StdioLoad) stamp() int64 { return int64(time.Since(s.base)) + 1 }

// read is the only reader of the server's stdout once the handshake is
// done: it checks every answer, matches it to its request and frees its
// window slot.
func (s *StdioLoad) read() {
	defer close(s.readerDone)
	for {
		line, err := s.r.ReadSlice('\n')
		if err != nil {
			if !s.closing.Load() {
				s.fail(fmt.Errorf("reading answers: %w", err))
			}
			return
		}
		now := s.stamp()
		id, text, err := wire.Parse(line)
		if errors.Is(err, wire.ErrNotResponse) {
			continue
		}
		if err != nil {
			s.fail(err)
			return
		}
		sl := &s.slots[id&slotMask]
		sent := sl.sent.Swap(0)
		if sent == 0 || sl.id.Load() != id {
			s.fail(fmt.Errorf("an answer with id %d, which is not in flight", id))
			return
		}
		if text != s.want {
			s.fail(fmt.Errorf("call %d: text %q, want %q", id, text, s.want))
			return
		}
		s.lat = append(s.lat, time.Duration(now-sent))
		<-s.sem
		if n := s.received.Add(1); n == s.target.Load() {
			select {
			case s.phaseEnd <- struct{}{}:
			default:
			}
		}
	}
}

// drainTimeout bounds the wait for the answers still in flight when a
// phase has sent its last request.
const drainTimeout = 30 * time.Second

// Run runs one phase: requests are sent while the window has room (the
// buffered ones are flushed whenever it is full) until the phase is over,
// then every answer still in flight is awaited.
func (s *StdioLoad) Run(ctx context.Context, p Phase, w Watch) (Result, error) {
	select {
	case <-s.phaseEnd: // a stale signal of the last phase
	default:
	}
	// No request is in flight between phases, so the reader is idle.
	s.lat = s.lat[:0]
	s.received.Store(0)
	s.target.Store(-1)

	meter := startCPU(w)
	start := time.Now()
	deadline := start.Add(p.Duration)
	var n int64
	for {
		if p.Count > 0 {
			if n >= p.Count {
				break
			}
		} else if !time.Now().Before(deadline) {
			break
		}
		select {
		case s.sem <- struct{}{}:
		default:
			if err := s.w.Flush(); err != nil {
				return Result{}, s.errOr(err)
			}
			select {
			case s.sem <- struct{}{}:
			case <-s.failed:
				return Result{}, s.failErr
			case <-ctx.Done():
				return Result{}, ctx.Err()
			}
		}
		id := s.nextID
		s.nextID++
		sl := &s.slots[id&slotMask]
		if sl.sent.Load() != 0 {
			return Result{}, fmt.Errorf("request %d is still unanswered after %d later ones", sl.id.Load(), slotMask)
		}
		sl.id.Store(id)
		sl.sent.Store(s.stamp())
		line := append(wire.AppendCall(s.w.AvailableBuffer(), id, false), '\n')
		if _, err := s.w.Write(line); err != nil {
			return Result{}, s.errOr(err)
		}
		n++
	}
	s.target.Store(n)
	if err := s.w.Flush(); err != nil {
		return Result{}, s.errOr(err)
	}
	if s.received.Load() != n {
		select {
		case <-s.phaseEnd:
		case <-s.failed:
			return Result{}, s.failErr
		case <-ctx.Done():
			return Result{}, ctx.Err()
		case <-time.After(drainTimeout):
			return Result{}, fmt.Errorf("%d answers still missing %v after the last request", n-s.received.Load(), drainTimeout)
		}
	}
	end := time.Now()
	cpu := meter.stop()
	select {
	case <-s.failed:
		return Result{}, s.failErr
	default:
	}
	r := summarize(s.lat, start, end)
	r.CPU = cpu
	return r, nil
}

func (s *StdioLoad) errOr(err error) error {
	select {
	case <-s.failed:
		return s.failErr
	default:
		return err
	}
}

// Close ends the server's input and waits for it to exit (then SIGTERM,
// then SIGKILL, each after a bound). It returns the server's exit error.
func (s *StdioLoad) Close() error {
	s.closing.Store(true)
	s.stdin.Close()
	exited := make(chan error, 1)
	go func() { exited <- s.cmd.Wait() }()
	var err error
	select {
	case err = <-exited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err = <-exited:
		case <-time.After(5 * time.Second):
			_ = s.cmd.Process.Kill()
			err = <-exited
		}
		err = fmt.Errorf("server did not exit when its input ended: %w", err)
	}
	if s.reading {
		<-s.readerDone // the server has exited: its stdout has ended
	}
	s.stdout.Close()
	return err
}
