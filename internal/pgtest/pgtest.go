// Package pgtest runs a real PostgreSQL server for a test: a cluster of
// its own, made by initdb in a temporary directory, its socket in a
// private directory of that one and TCP on a free 127.0.0.1 port (never
// 5432), stopped and removed when the test ends.
//
// The server binaries are Debian's postgresql package's
// (/usr/lib/postgresql/VERSION/bin, not on PATH; scripts/lib.sh
// need_postgres installs it). initdb and postgres refuse to run as root,
// so as root the cluster runs as the postgres user the package creates;
// as anyone else it runs as that user.
//
// Where the binaries are missing the test is skipped with one line saying
// how to install them — unless AGENTMCP_REQUIRE_POSTGRES is set
// (scripts/test.sh sets it), where it fails: CI can install them, so a
// skip there would hide the tests.
//
// Connections over TCP authenticate with a password (scram-sha-256), so
// the tests exercise the password paths a deployment uses; the password
// is [Cluster.Password], handed to clients through PGPASSWORD or a
// password file, never in a URL. The socket directory trusts its peer
// (only the owner can enter it).
//
// Standard library only: a test that wants a client brings its own.
package pgtest

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// RequireVariable, when set to anything, makes a missing PostgreSQL a
// test failure instead of a skip.
const RequireVariable = "AGENTMCP_REQUIRE_POSTGRES"

// User is the cluster's superuser, the one its URLs name.
const User = "agentmcp"

// startTimeout bounds one start of the server (its log saying it is
// ready), a guard against a hang: the wait itself is the log line.
const startTimeout = 2 * time.Minute

// Cluster is one running PostgreSQL server of a test.
type Cluster struct {
	// Password is the superuser's password (hex, 32 characters).
	Password string

	// Port is the server's TCP port on 127.0.0.1.
	Port int

	// SocketDir is the directory of its Unix socket.
	SocketDir string

	bin  string // the server binaries' directory
	dir  string // everything of the cluster: data, socket, password file
	data string
	cred *syscall.Credential // whom the server runs as; nil: this process's user

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	log     strings.Builder // the server's log, for a failing test
	dbCount int
}

// Bin returns the directory of the PostgreSQL server binaries, the newest
// version's: "" when there are none.
func Bin() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d
		}
	}
	return ""
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// Start creates and starts a cluster for t, stopped and removed when t
// ends. It skips t (or fails it: [RequireVariable]) when PostgreSQL is
// not installed.
func Start(t testing.TB) *Cluster {
	t.Helper()
	if Bin() == "" {
		msg := "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): apt-get install --no-install-recommends postgresql, or run scripts/test.sh as root"
		if os.Getenv(RequireVariable) != "" {
			t.Fatal(msg + " (" + RequireVariable + " is set)")
		}
		t.Skip(msg)
	}
	c, err := Run()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// Run creates and starts a cluster outside a test (the end-to-end test's
// own PostgreSQL, internal/e2eparts); [Cluster.Close] stops and removes
// it. It fails when PostgreSQL is not installed.
func Run() (*Cluster, error) {
	bin := Bin()
	if bin == "" {
		return nil, errors.New("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb)")
	}
	c := &Cluster{bin: bin}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root, the cluster runs as the postgres user, and there is none: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}
	}
	// Not t.TempDir: as root its directory is root's 0700, which the
	// postgres user cannot enter. The parent must be one it can: TMPDIR
	// when that is enterable by all, else /tmp.
	parent := os.TempDir()
	if c.cred != nil {
		if fi, err := os.Stat(parent); err != nil || fi.Mode().Perm()&0o001 == 0 {
			parent = "/tmp"
		}
	}
	dir, err := os.MkdirTemp(parent, "pgtest-")
	if err != nil {
		return nil, err
	}
	c.dir = dir
	if err := c.create(); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// create makes the cluster in c.dir and starts its server.
func (c *Cluster) create() error {
	c.data = filepath.Join(c.dir, "data")
	c.SocketDir = filepath.Join(c.dir, "socket")
	if err := os.Mkdir(c.SocketDir, 0o700); err != nil {
		return err
	}
	var b [16]byte
	rand.Read(b[:])
	c.Password = hex.EncodeToString(b[:])
	pwfile := filepath.Join(c.dir, "pwfile")
	if err := os.WriteFile(pwfile, []byte(c.Password+"\n"), 0o600); err != nil {
		return err
	}
	if c.cred != nil {
		for _, p := range []string{c.dir, c.SocketDir, pwfile} {
			if err := os.Chown(p, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
				return err
			}
		}
	}
	initdb := c.command(filepath.Join(c.bin, "initdb"), "-D", c.data, "-U", User, "--pwfile", pwfile,
		"--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync")
	if out, err := initdb.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %v\n%s", err, out)
	}
	os.Remove(pwfile)
	return c.startServer()
}

// Close stops the server and removes the cluster.
func (c *Cluster) Close() {
	c.stop()
	os.RemoveAll(c.dir)
}

// command is name with args, run as the cluster's user.
func (c *Cluster) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = c.dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C"}
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	return cmd
}

// startServer starts postgres on a free port and waits for its log to say
// it accepts connections. A port taken between choosing and binding (by
// another test) is chosen again.
func (c *Cluster) startServer() error {
	for attempt := 0; ; attempt++ {
		port := c.Port
		if port == 0 || attempt > 0 {
			var err error
			if port, err = freePort(); err != nil {
				return err
			}
		}
		err := c.run(port)
		if err == nil {
			c.Port = port
			return nil
		}
		if !errors.Is(err, errPortTaken) || attempt >= 5 {
			return fmt.Errorf("postgres: %v\n%s", err, c.Log())
		}
	}
}

var errPortTaken = errors.New("the port is taken")

func (c *Cluster) run(port int) error {
	cmd := c.command(filepath.Join(c.bin, "postgres"), "-D", c.data, "-k", c.SocketDir,
		"-c", "listen_addresses=127.0.0.1", "-p", strconv.Itoa(port),
		"-c", "fsync=off", "-c", "max_connections=200", "-c", "log_min_messages=warning")
	r, w := io.Pipe()
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		w.Close()
		close(exited)
	}()
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(r)
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			c.mu.Lock()
			c.log.WriteString(line + "\n")
			c.mu.Unlock()
			switch {
			case signalled:
			case strings.Contains(line, "ready to accept connections"):
				ready <- nil
				signalled = true
			case strings.Contains(line, "could not bind") || strings.Contains(line, "Address already in use"):
				ready <- errPortTaken
				signalled = true
			}
		}
		if !signalled {
			ready <- errors.New("it exited before it was ready")
		}
	}()
	select {
	case err := <-ready:
		if err != nil {
			cmd.Process.Kill()
			<-exited
			return err
		}
	case <-time.After(startTimeout):
		cmd.Process.Kill()
		<-exited
		return fmt.Errorf("not ready after %v", startTimeout)
	}
	c.mu.Lock()
	c.cmd, c.exited = cmd, exited
	c.mu.Unlock()
	return nil
}

func freePort() (int, error) {
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if port != 5432 {
			return port, nil
		}
	}
}

// Log is what the server has logged so far.
func (c *Cluster) Log() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.log.String()
}

// Stop stops the server (a fast shutdown: open sessions are ended) and
// waits for it to exit; a stopped server stays stopped.
func (c *Cluster) Stop(testing.TB) { c.stop() }

func (c *Cluster) stop() {
	c.mu.Lock()
	cmd, exited := c.cmd, c.exited
	c.cmd = nil
	c.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGINT) // postgres: fast shutdown
	select {
	case <-exited:
	case <-time.After(startTimeout):
		cmd.Process.Kill()
		<-exited
	}
}

// Restart stops the server and starts it again on the same port: what a
// client sees as a database restarted under it.
func (c *Cluster) Restart(t testing.TB) {
	t.Helper()
	c.Stop(t)
	if err := c.run(c.Port); err != nil {
		t.Fatalf("postgres restart on port %d: %v\n%s", c.Port, err, c.Log())
	}
}

// URL returns a postgres:// URL of database db over TCP, without the
// password (sslmode=disable: the test server has no certificate).
func (c *Cluster) URL(db string) string {
	u := url.URL{Scheme: "postgres", User: url.User(User), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(c.Port)),
		Path: "/" + db, RawQuery: "sslmode=disable"}
	return u.String()
}

// CreateDatabase creates a new, empty database and returns its name.
func (c *Cluster) CreateDatabase(t testing.TB) string {
	t.Helper()
	name, err := c.NewDatabase()
	if err != nil {
		t.Fatal(err)
	}
	return name
}

// NewDatabase is CreateDatabase outside a test.
func (c *Cluster) NewDatabase() (string, error) {
	c.mu.Lock()
	c.dbCount++
	name := fmt.Sprintf("test_%d", c.dbCount)
	c.mu.Unlock()
	_, err := c.sql("postgres", "CREATE DATABASE "+name)
	return name, err
}

// SQL runs statements in database db with psql over the socket, as the
// superuser, and returns what psql printed (unaligned, tuples only).
func (c *Cluster) SQL(t testing.TB, db, statements string) string {
	t.Helper()
	out, err := c.sql(db, statements)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (c *Cluster) sql(db, statements string) (string, error) {
	cmd := c.command(filepath.Join(c.bin, "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
		"-h", c.SocketDir, "-p", strconv.Itoa(c.Port), "-U", User, "-d", db, "-c", statements)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("psql %q: %v\n%s", statements, err, out)
	}
	return strings.TrimSpace(string(out)), nil
}
