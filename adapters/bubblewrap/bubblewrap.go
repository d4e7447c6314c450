// Package bubblewrap runs a command inside bubblewrap
// (https://github.com/containers/bubblewrap, Debian's bubblewrap package,
// the bwrap program): run_command's default sandbox (docs/SPEC.md §9 "The
// sandbox"), built the way the sandboxes of Claude Code and codex are on
// Linux. A command sees:
//
//   - the whole file system read-only (--ro-bind / /), with a /dev of its
//     own (null, zero, full, random, urandom, tty, a private /dev/pts and
//     /dev/shm) and a /proc of its own PID namespace;
//   - an empty file system over every place where the user's sockets and
//     secrets live, since a read-only mount does not stop connect(2):
//     /run (and /var/run where it is a directory), $XDG_RUNTIME_DIR;
//     /tmp is the session's private temporary directory (TMPDIR=/tmp) and
//     $HOME (and the account's home, when it differs) an empty directory
//     private to the session, both kept across its commands;
//   - the workspace root read-write on top (so a root under $HOME works),
//     with its .git read-only (a hook or a core.fsmonitor planted there
//     would run, unsandboxed, at the person's next git command), and the
//     git directory a .git file names read-only too;
//   - then, masked again even inside the root, the server's own state:
//     Options.Hide (the conversation store, token files, sockets);
//
// in new user, PID, IPC, UTS and cgroup namespaces and, unless
// Options.Network, a network namespace of its own with nothing but a
// loopback interface; with every capability dropped, no new user
// namespace allowed inside (where bwrap has --disable-userns, and the
// command runs unprivileged), in a new
// session (so no controlling terminal to type into), and killed with its
// whole PID namespace when bwrap or the server ends (--die-with-parent).
//
// The package knows nothing of Landlock: the command it wraps is usually
// adapters/landlock's launcher, the second layer; a command vector whose
// program is /proc/self/exe (the launcher, by the kernel's link to the
// running binary) is run from a read-only bind of that very binary
// (Options.Launcher).
package bubblewrap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Options configure a [Sandbox].
type Options struct {
	// Network keeps the host's network: without it a command has a
	// network namespace of its own, with only a loopback interface.
	Network bool
	// Hide returns, when each command starts, the absolute paths masked
	// from it even where they lie inside the root (the server's own state:
	// its conversation store, token files, sockets): an existing directory
	// is covered by an empty one, any other existing file by a node that
	// cannot be opened or connected to. What does not exist then is not
	// masked (nothing to hide). Nil hides nothing more.
	Hide func() []string
	// Homes are the home directories to replace by the session's private
	// one ($HOME, and the account's home directory when it differs);
	// relative paths and "/" are ignored. The root is bound on top, so a
	// root under a home stays the root.
	Homes []string
	// RuntimeDir is $XDG_RUNTIME_DIR (hidden unless it is under /run).
	RuntimeDir string
	// AdminLauncher starts the command with CAP_SYS_ADMIN and CAP_SETPCAP
	// within the sandbox's user namespace, for a launcher that remounts
	// the bound device nodes read-only and then drops every capability
	// (adapters/landlock's Options.ReadOnlyDevices): as root, a command
	// could otherwise change the mode and times of the host's /dev/null.
	// Never for a command that does not drop them itself.
	AdminLauncher bool
	// Launcher is an open file of the executable a command vector's
	// /proc/self/exe names (the server's own, opened at start, so never a
	// file put at its path since): it reaches bwrap as descriptor 3
	// ([Sandbox.Files]) and is bound read-only at [LauncherPath].
	Launcher *os.File
}

// Sandbox wraps commands into bwrap argument vectors.
type Sandbox struct {
	bwrap         string
	disableUserns bool // bwrap has --disable-userns (0.8 and later)
	o             Options
}

// ErrUnavailable is wrapped by New's error when bwrap is missing or cannot
// make its namespaces here.
var ErrUnavailable = errors.New("bubblewrap is not available")

// LauncherPath is where a command vector's /proc/self/exe is bound inside
// the sandbox (/run is the sandbox's own).
const LauncherPath = "/run/agentmcp/launcher"

// New finds bwrap on PATH and checks, by running it once, that it can make
// the namespaces a command runs in. Its error wraps [ErrUnavailable] and
// says, in one line, what to install or turn on.
func New(o Options) (*Sandbox, error) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, fmt.Errorf("%w: bwrap is not on PATH (install the bubblewrap package: apt-get install bubblewrap)", ErrUnavailable)
	}
	s := &Sandbox{bwrap: bwrap, o: o}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	help, _ := exec.CommandContext(ctx, bwrap, "--help").CombinedOutput()
	s.disableUserns = bytes.Contains(help, []byte("--disable-userns"))
	probe := append(s.namespaces(), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--", "true")
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bwrap, probe...)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		why := strings.TrimSpace(strings.SplitN(stderr.String(), "\n", 2)[0])
		if why == "" {
			why = err.Error()
		}
		return nil, fmt.Errorf("%w: bwrap cannot make its namespaces here (%s): allow unprivileged user namespaces "+
			"(sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0; on Ubuntu an AppArmor profile for bwrap)", ErrUnavailable, why)
	}
	return s, nil
}

// namespaces are the namespace and privilege options of every run.
func (s *Sandbox) namespaces() []string {
	a := []string{"--die-with-parent", "--new-session",
		"--unshare-user", "--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try"}
	if !s.o.Network {
		a = append(a, "--unshare-net")
	}
	// --disable-userns runs the command in a user namespace nested in the
	// one that owns its mounts, where an AdminLauncher could not remount
	// anything; Landlock inside forbids mounting in any namespace anyway.
	if s.disableUserns && !s.o.AdminLauncher {
		a = append(a, "--disable-userns")
	}
	a = append(a, "--cap-drop", "ALL")
	if s.o.AdminLauncher {
		a = append(a, "--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP")
	}
	return a
}

// Files are the open files every command's bwrap must get as descriptors
// 3, 4, ... (exec.Cmd's ExtraFiles): Options.Launcher.
func (s *Sandbox) Files() []*os.File {
	if s.o.Launcher == nil {
		return nil
	}
	return []*os.File{s.o.Launcher}
}

// Bwrap is the bwrap program New found.
func (s *Sandbox) Bwrap() string { return s.bwrap }

// Writable returns the directories a command may write inside the
// sandbox for a workspace root: the root, /tmp, the private home at each
// of Options.Homes it replaces, and /dev/shm (the sandbox's own) — what a
// second layer inside (Landlock) should allow.
func (s *Sandbox) Writable(root string) []string {
	w := []string{root, "/tmp", "/dev/shm"}
	return append(w, s.homes(root)...)
}

// homes returns the Options.Homes the sandbox replaces.
func (s *Sandbox) homes(root string) []string {
	var out []string
	for _, h := range s.o.Homes {
		h = filepath.Clean(h)
		if !filepath.IsAbs(h) || h == "/" || slicesContain(out, h) {
			continue
		}
		if fi, err := os.Stat(h); err != nil || !fi.IsDir() {
			continue
		}
		out = append(out, h)
	}
	return out
}

func slicesContain(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// under reports whether p is dir or lies beneath it.
func under(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// Wrap returns the bwrap argument vector that runs argv in the sandbox
// over the workspace root (absolute, read-write, the working directory),
// with temp (absolute, the session's private temporary directory) at
// /tmp and temp/home as the private home.
func (s *Sandbox) Wrap(argv []string, root, temp string) ([]string, error) {
	switch {
	case len(argv) == 0 || !filepath.IsAbs(argv[0]):
		return nil, errors.New("bubblewrap: the command must be an absolute path")
	case !filepath.IsAbs(root) || !filepath.IsAbs(temp):
		return nil, errors.New("bubblewrap: the root and the temporary directory must be absolute")
	}
	root, temp = filepath.Clean(root), filepath.Clean(temp)
	home := filepath.Join(temp, "home")
	if err := os.Mkdir(home, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("bubblewrap: cannot make the private home: %v", err)
	}
	a := append([]string{s.bwrap}, s.namespaces()...)
	a = append(a, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
		"--bind", temp, "/tmp", "--tmpfs", "/run")
	hidden := []string{"/tmp", "/run", "/dev"}
	if fi, err := os.Lstat("/var/run"); err == nil && fi.IsDir() {
		a = append(a, "--tmpfs", "/var/run")
		hidden = append(hidden, "/var/run")
	}
	if d := filepath.Clean(s.o.RuntimeDir); filepath.IsAbs(d) && d != "/" && !underAny(d, hidden) {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			a = append(a, "--tmpfs", d)
			hidden = append(hidden, d)
		}
	}
	for _, h := range s.homes(root) {
		a = append(a, "--bind", home, h)
		hidden = append(hidden, h)
	}
	a = append(a, "--bind", root, root)
	a = append(a, gitBinds(root)...)
	var hide []string
	if s.o.Hide != nil {
		hide = s.o.Hide()
	}
	for _, p := range hide {
		p = filepath.Clean(p)
		fi, err := os.Lstat(p)
		if !filepath.IsAbs(p) || err != nil || (underAny(p, hidden) && !under(p, root)) {
			continue // relative, absent, or hidden already
		}
		if fi.IsDir() {
			a = append(a, "--tmpfs", p)
		} else {
			a = append(a, "--ro-bind", "/dev/null", p)
		}
	}
	if argv[0] == "/proc/self/exe" {
		if s.o.Launcher == nil {
			return nil, errors.New("bubblewrap: the command runs /proc/self/exe, and Options.Launcher is not set")
		}
		a = append(a, "--ro-bind-fd", "3", LauncherPath)
		argv = append([]string{LauncherPath}, argv[1:]...)
	}
	a = append(a, "--chdir", root, "--setenv", "TMPDIR", "/tmp", "--setenv", "TMP", "/tmp", "--setenv", "TEMP", "/tmp", "--")
	return append(a, argv...), nil
}

func underAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if under(p, d) {
			return true
		}
	}
	return false
}

// gitBinds makes the root's .git read-only: the directory, or a .git file
// and the git directory it names ("gitdir: PATH", a worktree's or a
// submodule's) with that directory's common directory, so git works
// inside and nothing of it can be changed. A .git that is a symbolic link
// is left as it is.
func gitBinds(root string) []string {
	dotgit := filepath.Join(root, ".git")
	fi, err := os.Lstat(dotgit)
	if err != nil || fi.Mode()&os.ModeSymlink != 0 {
		return nil
	}
	binds := []string{"--ro-bind", dotgit, dotgit}
	if fi.IsDir() {
		return binds
	}
	data, err := os.ReadFile(dotgit)
	if err != nil || len(data) > 4096 {
		return binds
	}
	dir, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir:")
	if !ok {
		return binds
	}
	for _, d := range gitDirs(root, strings.TrimSpace(dir)) {
		binds = append(binds, "--ro-bind", d, d)
	}
	return binds
}

// gitDirs returns the git directory dir (relative to root or absolute)
// and its common directory, those that are git directories (isGitDir).
// What a .git file names is the workspace's to say, so a command may have
// written it: only a git directory is ever bound, never a directory the
// sandbox hides otherwise (a home, a runtime directory).
func gitDirs(root, dir string) []string {
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(root, dir)
	}
	dir = filepath.Clean(dir)
	if !isGitDir(dir) {
		return nil
	}
	out := []string{dir}
	if data, err := os.ReadFile(filepath.Join(dir, "commondir")); err == nil {
		common := strings.TrimSpace(string(data))
		if !filepath.IsAbs(common) {
			common = filepath.Join(dir, common)
		}
		if common = filepath.Clean(common); isGitDir(common) && !slicesContain(out, common) {
			out = append(out, common)
		}
	}
	return out
}

// isGitDir reports whether dir is a git directory: a directory named .git
// or beneath one (a worktree's .git/worktrees/NAME, a submodule's
// .git/modules/NAME) holding a HEAD file.
func isGitDir(dir string) bool {
	if !slicesContain(strings.Split(dir, "/"), ".git") {
		return false
	}
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return false
	}
	head, err := os.Stat(filepath.Join(dir, "HEAD"))
	return err == nil && head.Mode().IsRegular()
}
