//go:build unix

package secretenv

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// supported: Unix re-executes.
const supported = true

// reexec writes payload on a new pipe and execs this binary with env and
// the pipe's read end; it returns only on failure.
func reexec(payload []byte, env []string) error {
	if len(payload) > maxPayload {
		return fmt.Errorf("the secrets are %d bytes, more than %d", len(payload), maxPayload)
	}
	exe, err := executable()
	if err != nil {
		return err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	if _, err := w.Write(payload); err != nil {
		return err
	}
	w.Close()
	fd, err := syscall.Dup(int(r.Fd())) // a duplicate is not close-on-exec: it crosses the exec
	if err != nil {
		return err
	}
	env = append(env, FDVariable+"="+strconv.Itoa(fd))
	return syscall.Exec(exe, os.Args, env)
}

// load reads the secrets a Reexec passed, when FDVariable names a pipe
// holding them, and removes FDVariable from the environment.
func load() error {
	v, ok := os.LookupEnv(FDVariable)
	if !ok {
		return nil
	}
	os.Unsetenv(FDVariable)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil // not ours
	}
	var st syscall.Stat_t
	if syscall.Fstat(fd, &st) != nil || uint32(st.Mode)&syscall.S_IFMT != syscall.S_IFIFO {
		return nil // not a pipe: not ours
	}
	f := os.NewFile(uintptr(fd), "secrets")
	defer f.Close()
	syscall.CloseOnExec(fd)
	rd := bufio.NewReader(io.LimitReader(f, maxPayload+1))
	if h, err := rd.ReadString('\n'); err != nil || h != header {
		return nil // not ours
	}
	rest, err := io.ReadAll(rd)
	if err != nil {
		return fmt.Errorf("cannot read the secrets passed at start: %v", err)
	}
	got := map[string]string{}
	for _, kv := range bytes.Split(rest, []byte{0}) {
		if name, value, ok := strings.Cut(string(kv), "="); ok {
			got[name] = value
		}
	}
	mu.Lock()
	values = got
	mu.Unlock()
	return nil
}

// executable is the binary to run again: the very file running (by the
// kernel's link to it on Linux), not whatever is at its path now.
func executable() (string, error) {
	if _, err := os.Stat("/proc/self/exe"); err == nil {
		return "/proc/self/exe", nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", errors.New("cannot find this program's executable")
	}
	return exe, nil
}
