package workspace

// SetBeforeOpen makes search_text call f before it opens each directory or
// file (its slash-separated path relative to the root).
func SetBeforeOpen(s *Session, f func(rel string)) { s.hooks.beforeOpen = f }

// SetBeforeMatch makes search_text call f before it matches each line of a
// file (the file's slash-separated path, the line's number from 1).
func SetBeforeMatch(s *Session, f func(rel string, line int)) { s.hooks.beforeMatch = f }
