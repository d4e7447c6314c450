//go:build !unix

package secretenv

import "errors"

// supported: elsewhere than Unix the secrets stay in the environment.
const supported = false

func reexec([]byte, []string) error {
	return errors.New("re-executing is not supported on this system")
}

// load has nothing to read outside Unix.
func load() error { return nil }
