package frontend

// SetListCache turns the kept tools/list pages on or off, so a benchmark
// can measure go-sdk's own encoding beside them in one run.
func SetListCache(f *Frontend, on bool) { f.lists.off.Store(!on) }
