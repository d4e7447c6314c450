package app

import "github.com/agentmcp/agentmcp/adapters/bubblewrap"

// SetLandlockAvailable replaces the Landlock check (to play a kernel
// without Landlock) and returns what restores it.
func SetLandlockAvailable(f func() (int, error)) (restore func()) {
	old := landlockAvailable
	landlockAvailable = f
	return func() { landlockAvailable = old }
}

// SetNewBubblewrap replaces the bubblewrap sandbox's constructor (to play a
// machine without bwrap) and returns what restores it.
func SetNewBubblewrap(f func(bubblewrap.Options) (*bubblewrap.Sandbox, error)) (restore func()) {
	old := newBubblewrap
	newBubblewrap = f
	return func() { newBubblewrap = old }
}

// SecretValues is agentmcp record's secretValues.
var SecretValues = secretValues
