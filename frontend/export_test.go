package frontend

// KeptPages is how many tools/list pages the front end answered from the
// kept tool encodings (listpages.go), so a test knows that path ran.
func KeptPages(f *Frontend) uint64 { return f.kept.held.Load() }
