package app

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
)

// The bearer token's file for "agentmcp serve http" (docs/SPEC.md §5.2
// "The token file"). Two kinds:
//
//   - per run (the default): a new token at every start, written to a file
//     this process holds locked while it serves and removes at exit. A file
//     left by a host that is no longer running (kill -9, an OOM kill, a
//     reboot without tmpfs) is known by its lock: the kernel drops a lock
//     with the process that held it, so a token file nobody holds locked is
//     stale and is reused; one a running host holds is refused.
//   - persistent (--persistent-token): created with a new token on the first
//     start, read again at every later start, so a client's configuration
//     keeps working across restarts; never removed; --rotate-token writes a
//     new token into it. It must be a regular file of this user that no one
//     else may read or write.
//
// Either way the file holds exactly the 64 lowercase hex characters of the
// token, nothing else, and anything else found at the path is never
// overwritten: a file that does not look like a token file is refused, so a
// mistyped --token-file cannot clobber a file the person keeps.

// tokenPattern is what a token file holds (httploopback's token: 32 bytes
// as lowercase hex).
var tokenPattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

// errTokenFileInUse: a running host holds the token file.
var errTokenFileInUse = errors.New("a running agentmcp serves with this token file")

// lockMode is how lockFile (tokenlock_*.go) locks a token file.
type lockMode int

const (
	sharedLock lockMode = iota
	exclusiveLock
)

// Errors of lockFile.
var (
	errWouldBlock      = errors.New("locked by another process")
	errLockUnsupported = errors.New("file locks are not supported here")
)

// tokenFile is the token file this process uses. It stays open (and, per
// run, locked) until close: while it is open its inode cannot be reused, so
// a file put in its place is never mistaken for it.
type tokenFile struct {
	path       string
	f          *os.File
	persistent bool
	token      string // the persistent token read at start; "" when a new one is to be written
	replaced   bool   // a stale token file was reused (per run)
	created    bool   // this process created the file
}

// openRunTokenFile opens the per-run token file at path: created
// exclusively with mode 0600, or, when path is "", a new file in the
// user's runtime directory or os.TempDir(). An existing file at path is
// reused when it is a stale token file (a regular file of this user holding
// a token or nothing, which no running host holds locked); otherwise it is
// refused with an error that says what to do.
func openRunTokenFile(path string) (*tokenFile, error) {
	if path == "" {
		dir := os.Getenv("XDG_RUNTIME_DIR")
		if dir == "" || !filepath.IsAbs(dir) {
			dir = os.TempDir()
		}
		f, err := os.CreateTemp(dir, "agentmcp-token-*") // O_EXCL, mode 0600
		if err != nil {
			return nil, err
		}
		return lockedTokenFile(&tokenFile{path: f.Name(), f: f}, exclusiveLock)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		return lockedTokenFile(&tokenFile{path: path, f: f}, exclusiveLock)
	}
	if !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	t, err := openExistingTokenFile(path, exclusiveLock, false)
	if err != nil {
		return nil, err
	}
	t.replaced = true
	return t, nil
}

// openPersistentTokenFile opens the persistent token file at path: the
// token it holds, or, when it does not exist yet (or rotate), a file into
// which the host's new token is written. A persistent file is held with a
// shared lock, so several hosts may use one token; rotating takes it
// exclusively, so a token a running host uses is not changed under it.
func openPersistentTokenFile(path string, rotate bool) (*tokenFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		return lockedTokenFile(&tokenFile{path: path, f: f, persistent: true, created: true}, exclusiveLock)
	}
	if !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	mode := sharedLock
	if rotate {
		mode = exclusiveLock
	}
	t, err := openExistingTokenFile(path, mode, true)
	if err != nil {
		return nil, err
	}
	t.persistent = true
	if rotate {
		t.token = ""
	} else if t.token == "" {
		t.close(nil)
		return nil, fmt.Errorf("%s holds no token (a start that did not finish?): start once with --rotate-token to write a new one", path)
	}
	return t, nil
}

// openExistingTokenFile opens the token file that exists at path and locks
// it with mode (without waiting): it must be a regular file (not a link) of
// this user holding a token or nothing, and, when persistent, readable and
// writable by this user alone. A persistent file's token is read into
// t.token.
func openExistingTokenFile(path string, mode lockMode, persistent bool) (*tokenFile, error) {
	f, err := openNoFollow(path)
	if err != nil {
		return nil, fmt.Errorf("%s exists and cannot be opened as a token file (%w): remove it or name another --token-file", path, err)
	}
	t := &tokenFile{path: path, f: f}
	fail := func(err error) (*tokenFile, error) {
		f.Close()
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		return fail(err)
	}
	if !st.Mode().IsRegular() || !ownedByMe(st) {
		return fail(fmt.Errorf("%s exists and is not a token file of this user (a regular file): name another --token-file", path))
	}
	b, err := io.ReadAll(io.LimitReader(f, 65))
	if err != nil {
		return fail(err)
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	if len(b) > 0 && !tokenPattern.Match(b) {
		return fail(fmt.Errorf("%s exists and does not hold a token: it is not a token file, so it is left alone; name another --token-file", path))
	}
	if persistent && st.Mode().Perm()&0o077 != 0 {
		return fail(fmt.Errorf("%s is readable or writable by others (mode %v): the token would not be secret; run chmod 600 %s and start again", path, st.Mode().Perm(), path))
	}
	if err := lockFile(f, mode); err != nil {
		if errors.Is(err, errWouldBlock) {
			if persistent {
				return fail(fmt.Errorf("%s: %w: stop it before rotating the token", path, errTokenFileInUse))
			}
			return fail(fmt.Errorf("%s: %w (its token is that host's): stop it, or name another --token-file", path, errTokenFileInUse))
		}
		return fail(fmt.Errorf("%s exists and cannot be locked (%w), so whether a running agentmcp uses it is unknown: if none does, remove it", path, err))
	}
	if same, err := sameFile(path, f); err != nil || !same {
		return fail(fmt.Errorf("%s changed while it was opened; start again", path))
	}
	if persistent {
		t.token = string(b)
	} else if err := f.Chmod(0o600); err != nil {
		return fail(err)
	}
	return t, nil
}

// lockedTokenFile locks a file just created; a process that opened it in
// between (taking it for a stale file) wins, and this start fails.
func lockedTokenFile(t *tokenFile, mode lockMode) (*tokenFile, error) {
	if err := lockFile(t.f, mode); err != nil && !errors.Is(err, errLockUnsupported) {
		t.f.Close()
		return nil, fmt.Errorf("%s: %w", t.path, errTokenFileInUse)
	}
	return t, nil
}

// write replaces the file's content with token (a per-run token, the
// first persistent one, or a rotated one), in place: the lock is on this
// inode.
func (t *tokenFile) write(token string) error {
	if err := t.f.Truncate(0); err != nil {
		return err
	}
	if _, err := t.f.WriteAt([]byte(token), 0); err != nil {
		return err
	}
	if err := t.f.Sync(); err != nil {
		return err
	}
	if t.persistent { // written: other hosts may use it too from now on
		_ = lockFile(t.f, sharedLock)
	}
	t.token = token
	return nil
}

// close ends this process's use of the file. A per-run file is removed
// first if path still names the file this process used (os.SameFile); a
// file put in its place meanwhile is left alone. A persistent file stays,
// unless this process created it and never wrote a token into it (start-up
// failed): then the next start creates it again.
// It is removed before it is closed, which drops the lock: otherwise a
// host starting in between could take the file over, and then lose it.
func (t *tokenFile) close(logger *slog.Logger) {
	defer t.f.Close()
	if logger == nil || (t.persistent && !(t.created && t.token == "")) {
		return
	}
	same, err := sameFile(t.path, t.f)
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		logger.Warn("cannot check the token file; not removing it", "path", t.path, "err", err)
		return
	case !same:
		logger.Info("token file replaced or gone; not removing it", "path", t.path)
		return
	}
	if err := os.Remove(t.path); err != nil {
		logger.Warn("cannot remove the token file", "path", t.path, "err", err)
	}
}

// sameFile reports whether path names f's file (not following a link).
func sameFile(path string, f *os.File) (bool, error) {
	mine, err := f.Stat()
	if err != nil {
		return false, err
	}
	now, err := os.Lstat(path)
	if err != nil {
		return false, err
	}
	return os.SameFile(now, mine), nil
}
