package workspace

// SetBeforeOpen makes search_text call f before it opens each directory or
// file (its slash-separated path relative to the root).
func SetBeforeOpen(s *Session, f func(rel string)) { s.hooks.beforeOpen = f }
