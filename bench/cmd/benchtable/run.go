package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/agentmcp/agentmcp/bench/internal/load"
)

// runner starts the bench's processes: benchserver and benchload, each
// pinned with taskset when pin is set.
type runner struct {
	serverBin, loadBin string
	tmp                string // this run's private directory
	pin                bool
	serverCPU, loadCPU string
	verbose            bool
	stderr             io.Writer
}

// build compiles benchserver and benchload into dir.
func build(ctx context.Context, benchDir, dir string) (serverBin, loadBin string, err error) {
	// -buildvcs=false: a checkout git refuses to read (another owner, no
	// git) must still build.
	cmd := exec.CommandContext(ctx, "go", "build", "-buildvcs=false", "-o", dir+string(os.PathSeparator),
		"./cmd/benchserver", "./cmd/benchload")
	cmd.Dir = benchDir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return filepath.Join(dir, "benchserver"), filepath.Join(dir, "benchload"), nil
}

// argv prefixes a command with taskset when pinning.
func (r *runner) argv(cpu string, bin string, args ...string) []string {
	if r.pin {
		return append([]string{"taskset", "-c", cpu, bin}, args...)
	}
	return append([]string{bin}, args...)
}

// server is a running benchserver (HTTP).
type server struct {
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	info     load.ServerInfo
	infoFile string
	stderr   *bytes.Buffer
	exited   chan error
}

// startTimeout bounds a server's start (the remote host makes an RSA key).
const startTimeout = 60 * time.Second

// startServer starts benchserver for an HTTP server and waits for its
// listening line, which it keeps in a private file for benchload.
func (r *runner) startServer(ctx context.Context, name string, debug bool) (*server, error) {
	args := []string{"-transport", "http", "-server", name, "-keydir", r.tmp}
	if debug {
		args = append(args, "-debug")
	}
	argv := r.argv(r.serverCPU, r.serverBin, args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	s := &server{cmd: cmd, stderr: &bytes.Buffer{}, exited: make(chan error, 1)}
	cmd.Stderr = s.stderr
	if r.verbose {
		cmd.Stderr = io.MultiWriter(s.stderr, r.stderr)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s.stdin = stdin
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		lines <- line
		_, _ = io.Copy(io.Discard, stdout)
		s.exited <- cmd.Wait()
	}()
	var line string
	select {
	case line = <-lines:
	case <-time.After(startTimeout):
	case <-ctx.Done():
	}
	if line == "" {
		s.stop()
		return nil, fmt.Errorf("benchserver %s did not start: %s", name, strings.TrimSpace(s.stderr.String()))
	}
	if err := json.Unmarshal([]byte(line), &s.info); err != nil {
		s.stop()
		return nil, fmt.Errorf("benchserver %s: %v: %q", name, err, line)
	}
	f, err := os.CreateTemp(r.tmp, "info-*.json")
	if err != nil {
		s.stop()
		return nil, err
	}
	s.infoFile = f.Name()
	if _, err := f.WriteString(line); err != nil {
		f.Close()
		s.stop()
		return nil, err
	}
	if err := f.Close(); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// stop ends the server: stdin closed and SIGTERM, then SIGKILL after a
// bound. It returns the server's exit error.
func (s *server) stop() error {
	s.stdin.Close()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	var err error
	select {
	case err = <-s.exited:
	case <-time.After(15 * time.Second):
		_ = s.cmd.Process.Kill()
		err = errors.Join(errors.New("did not stop on SIGTERM; killed"), <-s.exited)
	}
	if s.infoFile != "" {
		os.Remove(s.infoFile)
	}
	if err != nil {
		return fmt.Errorf("benchserver %s: %w: %s", s.info.Server, err, strings.TrimSpace(s.stderr.String()))
	}
	return nil
}

// loadTimeout bounds one benchload run beyond its planned duration.
const loadTimeout = 3 * time.Minute

// runLoad runs benchload with args and decodes its report.
func (r *runner) runLoad(ctx context.Context, args ...string) (*load.Report, error) {
	ctx, cancel := context.WithTimeout(ctx, loadTimeout)
	defer cancel()
	argv := r.argv(r.loadCPU, r.loadBin, args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if r.verbose {
		cmd.Stderr = io.MultiWriter(&stderr, r.stderr)
	}
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("benchload: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	var rep load.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		return nil, fmt.Errorf("benchload's report: %v: %q", err, stdout.String())
	}
	return &rep, nil
}

// plan is a load's phases as benchload flags.
type plan struct {
	warmup, duration   time.Duration
	warmupCount, count int64
}

func (p plan) args() []string {
	a := []string{"-warmup", p.warmup.String(), "-duration", p.duration.String()}
	if p.warmupCount > 0 {
		a = append(a, "-warmup-count", fmt.Sprint(p.warmupCount))
	}
	if p.count > 0 {
		a = append(a, "-count", fmt.Sprint(p.count))
	}
	return a
}

// httpRow runs one HTTP row: a fresh server, benchload against it, the
// server stopped.
func (r *runner) httpRow(ctx context.Context, rw row, p plan, clients int, extra ...string) (*load.Report, error) {
	s, err := r.startServer(ctx, rw.Server, rw.Kind == kindMem)
	if err != nil {
		return nil, err
	}
	args := append([]string{"-info", s.infoFile, "-wire", rw.Wire, "-c", fmt.Sprint(clients)}, p.args()...)
	if rw.Tokens != "" {
		args = append(args, "-tokens", rw.Tokens)
	}
	if rw.Workload != "" {
		args = append(args, "-workload", rw.Workload)
	}
	if rw.Kind == kindMem {
		args = append(args, "-mem")
	}
	rep, err := r.runLoad(ctx, append(args, extra...)...)
	return rep, errors.Join(err, s.stop())
}

// stdioRow runs one stdio row: benchload starts the server itself.
func (r *runner) stdioRow(ctx context.Context, rw row, p plan, window int) (*load.Report, error) {
	args := append([]string{"-stdio", "-label", rw.Server, "-window", fmt.Sprint(window)}, p.args()...)
	args = append(append(args, "--"), r.argv(r.serverCPU, r.serverBin, "-transport", "stdio", "-server", rw.Server)...)
	return r.runLoad(ctx, args...)
}
