package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/localapi"
)

// runStorm connects one server through the engine whose standalone stream
// carries cfg.StormNotifications notifications/tools/list_changed within
// one second, and counts the tools/list requests the server receives from
// the first notification until the client has been quiet for a second.
func runStorm(ctx context.Context, cfg *Config, srv *Server, t *Table) error {
	const tag = "storm"
	n := cfg.StormNotifications
	dir := filepath.Join(cfg.TempDir, "storm")
	url := srv.Endpoint(tag, fmt.Sprintf("%s=%d", StormParam, n))
	if err := seedDir(ctx, dir, []config.Server{serverConfig("storm", url, false)}); err != nil {
		return err
	}
	c, err := openEngine(ctx, dir, true)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.Tools(ctx, localapi.ToolsRequest{ServerID: "storm", Connect: true}); err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	var st TagStats
	for {
		if st, err = srv.Tag(ctx, tag); err != nil {
			return err
		}
		if st.Storm != nil && st.Storm.Done {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: the storm was not delivered (%+v)", st.Storm)
		}
		time.Sleep(50 * time.Millisecond)
	}
	start := TagStats{Methods: map[string]int64{"tools/list": st.Storm.ListingsAtStart}}
	_, d, err := requestsSince(ctx, srv, tag, start, time.Second)
	if err != nil {
		return err
	}
	listings := d["tools/list"]
	logf(cfg, "storm: %d notifications in %d ms, %d listings after the first", st.Storm.Sent, st.Storm.BurstMillis, listings)
	t.Add(Row{
		Measure: fmt.Sprintf("list_changed storm: tools/list requests after %d notifications in %.1f s (engine)", st.Storm.Sent, float64(st.Storm.BurstMillis)/1000),
		GoSDK:   "n/a (no re-listing)",
		Remote:  fmt.Sprint(listings),
		Goal:    verdict("≤ 10", listings <= 10),
	})
	return nil
}
