package frontend

import "github.com/remotemcp/remotemcp/localapi"

// logListErrors logs the servers whose tools could not be listed, each
// error once: a server that stays down is listed again on every re-sync
// (another server's change, a host's subscription), and its error, whose
// words stay the same until the server's next connect attempt, would fill
// the host's log (issue #20 item 1: one line per server per backoff
// step). f.syncMu held.
func (f *Frontend) logListErrors(errs []localapi.ServerError) {
	now := make(map[string]string, len(errs))
	for _, e := range errs {
		now[e.ServerID] = e.Message
		if f.listErrs[e.ServerID] != e.Message {
			f.log.Warn("frontend: a server's tools could not be listed", "server", e.ServerID, "err", e.Message)
		}
	}
	f.listErrs = now
}
