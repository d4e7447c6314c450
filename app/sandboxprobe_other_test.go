//go:build !linux

package app_test

// probeMain does nothing outside Linux: the sandbox tests are Linux's.
func probeMain() {}
