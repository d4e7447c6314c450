//go:build linux

package app_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentmcp/agentmcp/internal/syncbuf"
)

// The sandbox tests (issue 32): each kind of reach a hostile approved
// command had is tried through a real server — this test binary started as
// "agentmcp serve stdio --allow-commands --ask-client" with OPENAI_API_KEY
// in its environment, a client that approves every prompt on its stdin and
// stdout — and must fail. They run as root (CI) and as an unprivileged
// user (scripts/test.sh runs this binary under setpriv); what only root can
// try is skipped otherwise.

// sandboxServer is one such server.
type sandboxServer struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	stderr *syncbuf.Buffer
	root   string
	// home and runtime are its HOME and XDG_RUNTIME_DIR: directories in
	// /var/tmp, a place the sandbox leaves visible, so that hiding them is
	// the sandbox's doing.
	home, runtime string
	next          int
	tty           *os.File // the master of the server's terminal, if any
}

// visibleDir makes a directory in /var/tmp (readable by a sandboxed
// command unless the sandbox hides it), removed when the test ends.
func visibleDir(t *testing.T, pattern string) string {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", pattern)
	if err != nil {
		t.Skipf("no /var/tmp to work in: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// startSandboxServer starts the server over a new root holding ./probe
// (this test binary, see runProbe), with args after --allow-commands.
func startSandboxServer(t *testing.T, args ...string) *sandboxServer {
	t.Helper()
	return startSandbox(t, sandboxOptions{args: args})
}

// sandboxOptions are startSandbox's: the root (default a new directory),
// a terminal (the server then runs in a session of its own, the slave of
// a new pseudo-terminal its controlling terminal), and the arguments after
// --allow-commands.
type sandboxOptions struct {
	root    string
	args    []string
	env     []string // more of the server's environment
	withTTY bool
}

// startSandbox is startSandboxServer with o.
func startSandbox(t *testing.T, o sandboxOptions) *sandboxServer {
	t.Helper()
	root := o.root
	if root == "" {
		root = t.TempDir()
	}
	s := &sandboxServer{t: t, root: root, stderr: &syncbuf.Buffer{},
		home: visibleDir(t, "agentmcp-home-"), runtime: visibleDir(t, "agentmcp-xdg-")}
	linkProbe(t, s.root)
	s.cmd = exec.Command(os.Args[0], append([]string{"serve", "stdio", "--root", s.root, "--ask-client", "--allow-commands"}, o.args...)...)
	if o.withTTY {
		master, slave := openPTY(t)
		s.tty = master
		s.cmd.ExtraFiles = []*os.File{slave}
		s.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 3}
		defer slave.Close()
	}
	// The Go toolchain's caches default into the home: the sandbox's
	// private one (a GOCACHE this test run was given would be read-only).
	var env []string
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); name != "GOCACHE" && name != "GOMODCACHE" && name != "GOPATH" {
			env = append(env, kv)
		}
	}
	s.cmd.Env = append(env, serveEnv+"=1", "OPENAI_API_KEY="+fakeKey, "HOME="+s.home, "XDG_RUNTIME_DIR="+s.runtime)
	s.cmd.Env = append(s.cmd.Env, o.env...)
	s.cmd.Stderr = s.stderr
	var err error
	if s.in, err = s.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.out = bufio.NewScanner(stdout)
	s.out.Buffer(nil, 8<<20)
	t.Cleanup(func() {
		s.in.Close()
		done := make(chan error, 1)
		go func() { done <- s.cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			s.cmd.Process.Kill()
			<-done
			t.Error("the server did not end when its input closed")
		}
	})
	s.send(elicitInit)
	if !s.out.Scan() {
		t.Fatalf("the server ended before initialize was answered: %s", s.stderr.String())
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

// linkProbe puts this test binary into dir as ./probe.
func linkProbe(t *testing.T, dir string) {
	t.Helper()
	dst := filepath.Join(dir, "probe")
	if os.Link(os.Args[0], dst) == nil {
		return
	}
	data, err := os.ReadFile(os.Args[0])
	if err == nil {
		err = os.WriteFile(dst, data, 0o755)
	}
	if err != nil {
		t.Fatalf("cannot put the probe into the root: %v", err)
	}
}

func (s *sandboxServer) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatalf("write to the server: %v (stderr: %s)", err, s.stderr.String())
	}
}

// sandboxRun is what one run_command call returned.
type sandboxRun struct {
	IsError bool
	Error   string
	commandResult
}

type commandResult struct {
	ExitCode  int    `json:"exitCode"`
	Signal    string `json:"signal"`
	TimedOut  bool   `json:"timedOut"`
	Output    string `json:"output"`
	Sandboxed bool   `json:"sandboxed"`
}

// run calls run_command with command (and timeout_s when not 0),
// approving its prompt, and returns the result; dialog is the prompt's
// message.
func (s *sandboxServer) run(command string, timeout int) (res sandboxRun, dialog string) {
	s.t.Helper()
	s.next++
	id := strconv.Itoa(100 + s.next)
	args := map[string]any{"command": command}
	if timeout > 0 {
		args["timeout_s"] = timeout
	}
	a, _ := json.Marshal(args)
	s.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"run_command","arguments":` + string(a) + `}}`)
	for s.out.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Message string `json:"message"`
			} `json:"params"`
			Result struct {
				Content []struct{ Text string } `json:"content"`
				IsError bool                    `json:"isError"`
			} `json:"result"`
		}
		if err := json.Unmarshal(s.out.Bytes(), &m); err != nil {
			s.t.Fatalf("server wrote %s: %v", s.out.Text(), err)
		}
		switch {
		case m.Method == "elicitation/create":
			dialog = m.Params.Message
			s.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"action":"accept","content":{"decision":"allow_once"}}}`)
		case string(m.ID) == id:
			if len(m.Result.Content) != 1 {
				s.t.Fatalf("run_command answered %s", s.out.Text())
			}
			var env struct {
				Success bool            `json:"success"`
				Error   string          `json:"error"`
				Result  json.RawMessage `json:"result"`
			}
			if err := json.Unmarshal([]byte(m.Result.Content[0].Text), &env); err != nil {
				s.t.Fatalf("envelope %s: %v", m.Result.Content[0].Text, err)
			}
			res.IsError, res.Error = m.Result.IsError, env.Error
			if len(env.Result) > 0 {
				json.Unmarshal(env.Result, &res.commandResult)
			}
			return res, dialog
		}
	}
	s.t.Fatalf("the server ended before answering %q (stderr: %s)", command, s.stderr.String())
	return res, ""
}

// output runs command and returns its output, failing the test when the
// command did not run (refused, or failed to start).
func (s *sandboxServer) output(command string) string {
	s.t.Helper()
	res, _ := s.run(command, 60)
	if res.IsError && !res.TimedOut {
		s.t.Fatalf("%q: %s (stderr: %s)", command, res.Error, s.stderr.String())
	}
	return res.Output
}

// refused runs the probe lines in command and fails the test for each
// line of output that says "reached".
func (s *sandboxServer) refused(what, command string) {
	s.t.Helper()
	out := s.output(command)
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "reached") {
			s.t.Errorf("%s: the sandboxed command %s", what, line)
		}
	}
	if !strings.Contains(out, "refused") {
		s.t.Errorf("%s: the probe did not run: %q", what, out)
	}
}

// listen makes a listener on network and address (a Unix socket's
// address "@name" is abstract), accepting and closing connections until
// the test ends.
func listen(t *testing.T, network, address string) net.Listener {
	t.Helper()
	ln, err := net.Listen(network, address)
	if err != nil {
		t.Fatalf("listen %s %s: %v", network, address, err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln
}

// TestSandboxHidesSockets: a Unix socket in each place the sandbox hides —
// /tmp, /dev/shm, /run, /var/run, $XDG_RUNTIME_DIR, $HOME — cannot be
// connected to (a read-only mount would not stop connect(2): the places are
// covered). /run and a real /var/run need root to hold a socket.
func TestSandboxHidesSockets(t *testing.T) {
	s := startSandboxServer(t)
	var socks []string
	add := func(dir string) {
		if dir == "" {
			return
		}
		path := filepath.Join(dir, fmt.Sprintf("agentmcp-test-%d-%d.sock", os.Getpid(), len(socks)))
		ln, err := net.Listen("unix", path)
		if err != nil {
			t.Logf("no socket in %s (%v): not tried", dir, err)
			return
		}
		t.Cleanup(func() { ln.Close() })
		socks = append(socks, path)
	}
	add("/tmp")
	add("/dev/shm")
	add("/run")
	if fi, err := os.Lstat("/var/run"); err == nil && fi.IsDir() {
		add("/var/run")
	}
	add(s.runtime)
	add(s.home)
	if len(socks) < 4 {
		t.Fatalf("only %d of the hidden places could hold a socket", len(socks))
	}
	var probes []string
	for _, p := range socks {
		probes = append(probes, "./probe unix "+p)
	}
	s.refused("a socket in a hidden place", strings.Join(probes, "\n"))
}

// TestSandboxNoLocalServices: nothing local outside the sandbox answers a
// command: a TCP listener on 127.0.0.1, an abstract Unix socket, the
// server's and this test's processes (signals, ptrace, /proc).
func TestSandboxNoLocalServices(t *testing.T) {
	s := startSandboxServer(t)
	tcp := listen(t, "tcp", "127.0.0.1:0")
	abstract := fmt.Sprintf("agentmcp-test-%d", os.Getpid())
	listen(t, "unix", "@"+abstract)
	server, self := s.cmd.Process.Pid, os.Getpid()
	s.refused("local services", fmt.Sprintf("./probe tcp %s; ./probe abstract %s; ./probe ptrace %d; ./probe ptrace %d",
		tcp.Addr(), abstract, server, self))
	for _, pid := range []int{server, self} {
		out := s.output(fmt.Sprintf("kill -0 %d 2>&1 && echo reached %d", pid, pid))
		if strings.Contains(out, "reached") {
			t.Errorf("the command may signal process %d (the server or this test)", pid)
		}
	}
	// The server's /proc entries: its environment held the API key.
	out := s.output(fmt.Sprintf("cat /proc/%d/environ; cat /proc/%d/cmdline", server, server))
	if strings.Contains(out, fakeKey) {
		t.Error("the command read the API key from the server's /proc/PID/environ")
	}
	if strings.Contains(out, "--allow-commands") {
		t.Error("the command read the server's /proc entries")
	}
}

// TestSandboxNetwork: no network unless --command-network; with it, TCP
// reaches out (and the approval dialog says so) while abstract sockets
// outside stay refused.
func TestSandboxNetwork(t *testing.T) {
	tcp := listen(t, "tcp", "127.0.0.1:0")
	abstract := fmt.Sprintf("agentmcp-test-net-%d", os.Getpid())
	listen(t, "unix", "@"+abstract)

	off := startSandboxServer(t)
	res, dialog := off.run("./probe tcp "+tcp.Addr().String()+"; ./probe dns example.com", 60)
	if strings.Contains(res.Output, "reached") || !strings.Contains(res.Output, "refused") {
		t.Errorf("without --command-network: %q", res.Output)
	}
	if !strings.Contains(dialog, `"network: none"`) {
		t.Errorf("the dialog does not say the command has no network:\n%s", dialog)
	}

	on := startSandboxServer(t, "--command-network")
	res, dialog = on.run("./probe tcp "+tcp.Addr().String(), 60)
	if !strings.Contains(res.Output, "reached tcp") {
		t.Errorf("with --command-network the command does not reach 127.0.0.1: %q", res.Output)
	}
	if !strings.Contains(dialog, `"network: ALLOWED (--command-network)"`) {
		t.Errorf("the dialog does not say the command has the network:\n%s", dialog)
	}
	on.refused("an abstract socket with --command-network", "./probe abstract "+abstract)
}

// TestSandboxNoDeviceNodes: no device node can be made (as root the kernel
// would otherwise allow it, and the node writes through to its device).
func TestSandboxNoDeviceNodes(t *testing.T) {
	s := startSandboxServer(t)
	out := s.output(`mknod chr c 1 3 2>&1 && echo reached chr; mknod blk b 7 0 2>&1 && echo reached blk; mkfifo fifo && echo fifo ok; ls -l`)
	if strings.Contains(out, "reached") {
		t.Errorf("a device node was made:\n%s", out)
	}
	if !strings.Contains(out, "fifo ok") {
		t.Errorf("a FIFO in the root should still be allowed:\n%s", out)
	}
	for _, name := range []string{"chr", "blk"} {
		if fi, err := os.Lstat(filepath.Join(s.root, name)); err == nil {
			t.Errorf("%s exists in the root: %v", name, fi.Mode())
		}
	}
}

// TestSandboxNoMetadataOutsideRoot: mode, times and extended attributes of
// files outside the root stay as they were (a 0600 key made 0666 was the
// attack); as root, the device nodes of /dev too.
func TestSandboxNoMetadataOutsideRoot(t *testing.T) {
	s := startSandboxServer(t)
	dir := visibleDir(t, "agentmcp-meta-")
	key := filepath.Join(dir, "key")
	if err := os.WriteFile(key, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(key)
	xattrs := unix.Setxattr(filepath.Join(dir, "key"), "user.probe", []byte("x"), 0) == nil
	if xattrs {
		unix.Removexattr(key, "user.probe")
	}
	var devBefore unix.Stat_t
	unix.Stat("/dev/null", &devBefore)
	t.Cleanup(func() { // as root on a sandbox that fails, put /dev/null's times back
		unix.UtimesNano("/dev/null", []unix.Timespec{devBefore.Atim, devBefore.Mtim})
	})
	out := s.output(fmt.Sprintf(`chmod 666 %[1]s 2>&1 && echo reached chmod
touch -d 2001-01-01T00:00:00Z %[1]s 2>&1 && echo reached touch
./probe xattr %[1]s
touch -d 2001-01-01T00:00:00Z /dev/null 2>&1 && echo reached touch /dev/null
true`, key))
	after, err := os.Stat(key)
	if err != nil {
		t.Fatal(err)
	}
	if after.Mode() != before.Mode() || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("the key's metadata changed: %v %v, was %v %v\n%s", after.Mode(), after.ModTime(), before.Mode(), before.ModTime(), out)
	}
	if buf := make([]byte, 64); xattrs {
		if n, err := unix.Getxattr(key, "user.agentmcp", buf); err == nil {
			t.Errorf("an extended attribute was planted on the key: %q", buf[:n])
		}
	}
	var devAfter unix.Stat_t
	unix.Stat("/dev/null", &devAfter)
	if devAfter.Mtim != devBefore.Mtim || devAfter.Mode != devBefore.Mode {
		t.Errorf("/dev/null's metadata changed:\n%s", out)
	}
	if strings.Contains(out, "reached") {
		t.Errorf("metadata outside the root changed:\n%s", out)
	}
}

// TestSandboxGitReadOnly: the root's .git (config, hooks) cannot be changed
// — a core.fsmonitor or a hook planted there would run, unsandboxed, at the
// person's next git command — nor moved away or replaced; the rest of the
// root stays writable.
func TestSandboxGitReadOnly(t *testing.T) {
	s := startSandboxServer(t)
	config := "[core]\n\trepositoryformatversion = 0\n"
	git := filepath.Join(s.root, ".git")
	for _, d := range []string{"hooks", "objects", "refs"} {
		os.MkdirAll(filepath.Join(git, d), 0o755)
	}
	os.WriteFile(filepath.Join(git, "config"), []byte(config), 0o644)
	os.WriteFile(filepath.Join(git, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	out := s.output(`printf '\tfsmonitor = ./evil\n' >> .git/config 2>&1 && echo reached config
touch .git/hooks/post-checkout 2>&1 && echo reached hooks
mv .git .git-moved 2>&1 && echo reached mv
rm -rf .git 2>&1; test -f .git/config || echo reached rm
ln -s /tmp .git/evil 2>&1 && echo reached symlink
echo made > made.txt && echo root writable`)
	if strings.Contains(out, "reached") {
		t.Errorf(".git changed:\n%s", out)
	}
	if got, _ := os.ReadFile(filepath.Join(git, "config")); string(got) != config {
		t.Errorf(".git/config = %q", got)
	}
	if entries, _ := os.ReadDir(filepath.Join(git, "hooks")); len(entries) != 0 {
		t.Errorf(".git/hooks holds %v", entries)
	}
	if !strings.Contains(out, "root writable") {
		t.Errorf("the root is not writable beside .git:\n%s", out)
	}
}

// marked returns the processes whose environment holds the variable
// assignment mark: what a server started with it in its environment ran,
// however the command detached it.
func marked(t *testing.T, mark string) []int {
	t.Helper()
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); bytes.HasPrefix(cmdline, []byte(os.Args[0]+"\x00serve\x00")) {
			continue // the server itself
		}
		env, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		for kv := range bytes.SplitSeq(env, []byte{0}) {
			if string(kv) == mark {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// awaitGone waits (on pidfds, at most patience each) for every process
// holding mark to exit, then looks once more for any that appeared since.
func awaitGone(t *testing.T, mark string) {
	t.Helper()
	for round := 0; round < 2; round++ {
		for _, pid := range marked(t, mark) {
			fd, err := unix.PidfdOpen(pid, 0)
			if errors.Is(err, unix.ESRCH) {
				continue
			}
			if err != nil {
				t.Fatalf("pidfd_open %d: %v", pid, err)
			}
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			for {
				n, err := unix.Poll(fds, int(patience/time.Millisecond))
				if errors.Is(err, unix.EINTR) {
					continue
				}
				if n == 0 {
					cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
					t.Errorf("process %d (%q) outlived the command", pid, cmdline)
					syscall.Kill(pid, syscall.SIGKILL)
				}
				break
			}
			unix.Close(fd)
		}
	}
}

// patience bounds the waits for something the test expects at once.
const patience = 10 * time.Second

// TestSandboxNoChildOutlivesTheCall: processes a command detaches — a new
// session (setsid), a job-control group (set -m), a double fork — end
// with the call: when the shell exits, when the timeout passes, and when
// the server itself is killed; under bubblewrap and under Landlock alone.
func TestSandboxNoChildOutlivesTheCall(t *testing.T) {
	const detach = `setsid sleep 1000 >/dev/null 2>&1 < /dev/null &
(set -m; sleep 1001 >/dev/null 2>&1 &)
( (sleep 1002 >/dev/null 2>&1 &) & )
`
	for _, sandbox := range []string{"bubblewrap", "landlock"} {
		t.Run(sandbox, func(t *testing.T) {
			for _, end := range []string{"exit", "timeout", "server"} {
				mark := fmt.Sprintf("AGENTMCP_TEST_MARK=%d-%s-%s", os.Getpid(), sandbox, end)
				s := startSandbox(t, sandboxOptions{args: []string{"--sandbox", sandbox}, env: []string{mark}})
				switch end {
				case "exit":
					s.output(detach)
				case "timeout":
					res, _ := s.run(detach+"sleep 1000", 1)
					if !res.TimedOut || !res.IsError {
						t.Errorf("a command past its timeout: %+v", res)
					}
				case "server":
					started := fifoAt(t, filepath.Join(s.root, "started"))
					a, _ := json.Marshal(map[string]any{"command": detach + "echo started > started; sleep 1000"})
					s.send(`{"jsonrpc":"2.0","id":999,"method":"tools/call","params":{"name":"run_command","arguments":` + string(a) + `}}`)
					for s.out.Scan() && !strings.Contains(s.out.Text(), "elicitation/create") {
					}
					var m struct{ ID json.RawMessage }
					json.Unmarshal(s.out.Bytes(), &m)
					s.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"action":"accept","content":{"decision":"allow_once"}}}`)
					select {
					case <-started:
					case <-time.After(patience):
						t.Fatalf("the command did not start: %s", s.stderr.String())
					}
					if n := len(marked(t, mark)); n < 4 {
						t.Errorf("%d processes of the command found, want at least 4", n)
					}
					s.cmd.Process.Kill()
				}
				awaitGone(t, mark)
			}
		})
	}
}

// fifoAt makes a named pipe and returns what is first written to it.
func fifoAt(t *testing.T, path string) <-chan string {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	ch := make(chan string, 1)
	go func() {
		data, _ := os.ReadFile(path)
		ch <- string(data)
	}()
	return ch
}

// TestSandboxNoControllingTerminal: a command cannot reach the terminal
// the server runs in (TIOCSTI would type into the person's shell): it runs
// in a session of its own.
func TestSandboxNoControllingTerminal(t *testing.T) {
	s := startSandbox(t, sandboxOptions{withTTY: true})
	s.refused("the controlling terminal", "./probe tiocsti")
}

// TestSandboxNoInheritedDescriptors: a descriptor the server inherited
// without close-on-exec (here its terminal, as descriptor 3) does not
// reach a command.
func TestSandboxNoInheritedDescriptors(t *testing.T) {
	s := startSandbox(t, sandboxOptions{withTTY: true})
	s.refused("the server's descriptors", "./probe fds")
}

// openPTY opens a new pseudo-terminal: its master and its slave.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	sl, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return m, sl
}

// TestSandboxHidesTheStateDir: the conversation store (every principal's
// conversations) cannot be read by a command, whether the state directory
// lies outside the root or inside it.
func TestSandboxHidesTheStateDir(t *testing.T) {
	for _, inside := range []bool{false, true} {
		t.Run(fmt.Sprintf("inside=%v", inside), func(t *testing.T) {
			root, state := t.TempDir(), visibleDir(t, "agentmcp-state-")
			if inside {
				state = filepath.Join(root, ".agentmcp-state")
			}
			s := startSandbox(t, sandboxOptions{root: root, args: []string{"--model", "m", "--model-url", "http://127.0.0.1:1/v1", "--no-model-probe", "--state-dir", state}})
			db := filepath.Join(state, "conversations.db")
			if _, err := os.Stat(db); err != nil {
				t.Fatalf("no store: %v", err)
			}
			out := s.output(fmt.Sprintf("ls -a %s\ncat %s >/dev/null 2>&1 && echo reached the store", state, db))
			if strings.Contains(out, "reached") || strings.Contains(out, "\nconversations.db") {
				t.Errorf("the command sees the store:\n%s", out)
			}
		})
	}
}

// TestSandboxRunsGoAndNpmTests: a developer's usual commands work inside
// the default sandbox, with their caches in the session's private home
// (Go's build cache in ~/.cache/go-build, npm's in ~/.npm) and their
// temporary files in the private /tmp, both kept across the session's
// commands: go test of a small module, then npm test of a small package.
func TestSandboxRunsGoAndNpmTests(t *testing.T) {
	root := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/small\n\ngo 1.22\n")
	write("small.go", "package small\n\nfunc Twice(n int) int { return 2 * n }\n")
	write("small_test.go", "package small\n\nimport \"testing\"\n\nfunc TestTwice(t *testing.T) {\n\tif Twice(2) != 4 {\n\t\tt.Fatal(Twice(2))\n\t}\n}\n")
	write("package.json", `{"name":"small","version":"1.0.0","private":true,"scripts":{"test":"node test.js"}}`)
	write("test.js", "const assert = require('node:assert');\nassert.strictEqual(2 * 2, 4);\nconsole.log('npm test passed');\n")
	s := startSandbox(t, sandboxOptions{root: root})
	if _, err := exec.LookPath("go"); err == nil {
		out := s.output("go test ./... 2>&1; ls -d ~/.cache/go-build >/dev/null && echo cache in the private home")
		if !strings.Contains(out, "ok  \texample.com/small") || !strings.Contains(out, "cache in the private home") {
			t.Errorf("go test in the sandbox:\n%s", out)
		}
		if again := s.output("go test ./... 2>&1"); !strings.Contains(again, "(cached)") {
			t.Errorf("the build cache was not kept for the next command:\n%s", again)
		}
	} else {
		t.Log("no go on PATH: go test not tried")
	}
	if _, err := exec.LookPath("npm"); err == nil {
		if out := s.output("npm test 2>&1"); !strings.Contains(out, "npm test passed") {
			t.Errorf("npm test in the sandbox:\n%s", out)
		}
	} else {
		t.Log("no npm on PATH: npm test not tried")
	}
}
