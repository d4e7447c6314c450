package workspace

// SetBeforeOpen makes search_text call f before it opens each directory or
// file (its slash-separated path relative to the root).
func SetBeforeOpen(s *Session, f func(rel string)) { s.hooks.beforeOpen = f }

// SetBeforeMatch makes search_text call f before it matches each line of a
// file (the file's slash-separated path, the line's number from 1).
func SetBeforeMatch(s *Session, f func(rel string, line int)) { s.hooks.beforeMatch = f }

// SetLineCheck makes search_text call f at each cancellation check while it
// matches a line longer than CancelCheckBytes, with the bytes of the line
// handed to the matcher so far, before the check.
func SetLineCheck(s *Session, f func(off int)) { s.hooks.lineCheck = f }

// LineCheckBytes is how many bytes of a long line the matcher reads between
// two cancellation checks.
const LineCheckBytes = lineCheckBytes

// Watching reports what the process's file watcher holds: the directories
// watched, and whether the watcher (an inotify instance) is open.
func Watching() (dirs int, open bool) {
	processWatches.mu.Lock()
	defer processWatches.mu.Unlock()
	return len(processWatches.dirs), processWatches.w != nil
}
