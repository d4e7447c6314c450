//go:build !linux

package landlock

import "errors"

var errNotLinux = errors.New("Landlock is a Linux feature: there is no sandbox on this system")

// Available reports that there is no Landlock outside Linux.
func Available() (int, error) { return 0, errNotLinux }

// Wrap fails outside Linux.
func Wrap(argv []string, o Options) ([]string, error) { return nil, errNotLinux }

// Main does nothing outside Linux: nothing is ever launched through it.
func Main() {}
