package app

// SetLandlockAvailable replaces the Landlock check (to play a kernel
// without Landlock) and returns what restores it.
func SetLandlockAvailable(f func() (int, error)) (restore func()) {
	old := landlockAvailable
	landlockAvailable = f
	return func() { landlockAvailable = old }
}
