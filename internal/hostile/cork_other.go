//go:build !linux

package hostile

func cork(uintptr) error { return nil }
