// Package secretenv keeps secrets out of process environments (docs/SPEC.md
// §9 "Secrets"): the rule that says which environment variables hold one,
// and the re-execution that takes the server's own secrets out of its
// environment, where any process of the user — a command it runs without
// a sandbox, say — could read them from /proc/PID/environ.
//
// [Reexec], called first in main by a process that will hold secrets,
// moves the variables it names onto a pipe and re-executes the same
// binary (the same process id) with an environment without them and the
// pipe's descriptor in [FDVariable]; the new image reads them back into
// memory and [Getenv] returns them. /proc/PID/environ shows a process's
// environment as it was at exec, so the secrets are in it no more, and a
// child started later inherits none of them.
//
// Standard library only.
package secretenv

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
)

// FDVariable names, in a re-executed process's environment, the pipe that
// holds its secrets. It is removed once they are read.
const FDVariable = "AGENTMCP_SECRETS_FD"

// header starts what Reexec writes on the pipe, so that a stray
// FDVariable naming some other descriptor is not read as secrets.
const header = "agentmcp-secrets 1\n"

// maxPayload bounds what Reexec writes: the pipe holds it whole before
// the new image runs (a pipe's default capacity is 64 KiB).
const maxPayload = 60 << 10

var (
	mu     sync.Mutex
	values map[string]string // the secrets read back from the pipe
)

// Getenv returns the secret variable name: what Reexec moved onto the pipe
// when it did, else the environment's value ("" when unset). A process that
// was not re-executed (tests, a library's host) reads its environment.
func Getenv(name string) string {
	mu.Lock()
	v, ok := values[name]
	mu.Unlock()
	if ok {
		return v
	}
	return os.Getenv(name)
}

// Reexec takes the variables names out of this process's environment. When
// the process was started by Reexec, it reads their values back from the
// pipe and returns. Otherwise, when none of them is set, it returns at
// once; else it re-executes this binary with the same arguments and an
// environment without them, and does not return — on a failure it prints
// one line on stderr and exits 1 (it never goes on with the secrets in its
// environment).
func Reexec(names []string) {
	if err := load(); err != nil {
		fmt.Fprintf(os.Stderr, "agentmcp: %v\n", err)
		os.Exit(1)
	}
	var payload bytes.Buffer
	payload.WriteString(header)
	var env []string
	found := false
	for _, kv := range os.Environ() {
		name, value, _ := strings.Cut(kv, "=")
		if contains(names, name) {
			found = true
			payload.WriteString(name + "=" + value + "\x00")
			continue
		}
		env = append(env, kv)
	}
	if !found || !supported {
		return
	}
	err := reexec(payload.Bytes(), env)
	fmt.Fprintf(os.Stderr, "agentmcp: cannot start again without the secrets in the environment: %v\n", err)
	os.Exit(1)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// secretWords are the words that, anywhere in a variable's name (any case),
// make it a secret.
var secretWords = []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"}

// secretNames are variables that hold a secret whatever the words of
// their names: connection strings that carry a password.
var secretNames = []string{"DATABASE_URL"}

// IsSecretName reports whether the variable name says it holds a secret: it
// holds KEY, TOKEN, SECRET, PASSWORD, PASSWD or CREDENTIAL in any case
// (OPENAI_API_KEY, GITHUB_TOKEN, SECRET_KEY_BASE, PGPASSWORD), ends in
// _PAT or is PAT (a personal access token: GITHUB_PAT), or is DATABASE_URL.
func IsSecretName(name string) bool {
	upper := strings.ToUpper(name)
	for _, w := range secretWords {
		if strings.Contains(upper, w) {
			return true
		}
	}
	return upper == "PAT" || strings.HasSuffix(upper, "_PAT") || contains(secretNames, upper)
}

// URLPassword returns the password of value when it is a URL that carries
// one in its user information (postgres://u:pw@host/db, a proxy's
// http://u:pw@proxy:3128).
func URLPassword(value string) (string, bool) {
	if !strings.Contains(value, "://") || !strings.Contains(value, "@") {
		return "", false
	}
	u, err := url.Parse(strings.TrimSpace(value))
	if err != nil || u.User == nil {
		return "", false
	}
	pw, ok := u.User.Password()
	return pw, ok && pw != ""
}

// IsSecret reports whether the variable name=value holds a secret: by its
// name (IsSecretName) or because its value is a URL with a password.
func IsSecret(name, value string) bool {
	if IsSecretName(name) {
		return true
	}
	_, ok := URLPassword(value)
	return ok
}
