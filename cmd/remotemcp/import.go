package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/store"
)

// maxImportSize bounds an imported document; real configs are a few KiB.
const maxImportSize = 16 << 20

func newServersImportCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "import FILE|-",
		Short: "Import servers from a Claude Code, Cursor, VS Code or Windsurf config",
		Long: `Import the remote (Streamable HTTP) servers of another MCP client's JSON
config: Claude Code / Claude Desktop / Cursor / Windsurf ({"mcpServers": …}),
VS Code ({"servers": …} or settings.json), or remotemcp's own format
(a JSON array of servers, or {"servers": [...]}). "-" reads stdin.

${VAR} references are expanded from the environment. Local (stdio) and
legacy SSE servers are skipped with the reason. Each server is added on its
own: one that fails never leaves anything half-written, and an id that
exists already is not changed. The exit status is non-zero only when
nothing could be imported and something went wrong, or when the file is
not valid JSON.`,
		Example: `  remotemcp servers import ~/.claude.json
  remotemcp servers import .cursor/mcp.json
  pbpaste | remotemcp servers import -`,
		Args: argsExactly(1, "FILE|-"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			data, err := readInput(a, name)
			if err != nil {
				return err
			}
			var servers []config.Server
			var skipped []config.Skipped
			if ownFormat(data) {
				servers, err = config.ParseServers(data)
			} else {
				var res config.ImportResult
				res, err = config.Import(data, a.env)
				servers, skipped = res.Servers, res.Skipped
			}
			if err != nil {
				return fmt.Errorf("%s: %w", displayName(name), fieldError(err))
			}
			if len(servers) == 0 && len(skipped) == 0 {
				fmt.Fprintf(a.streams.Err, "%s lists no servers; nothing to import\n", displayName(name))
				return nil
			}

			ctx := cmd.Context()
			added, failed := 0, 0
			if len(servers) > 0 {
				c, err := a.open(ctx)
				if err != nil {
					return err
				}
				defer c.Close()
				for _, srv := range servers {
					// One transaction per server: a failure leaves no trace
					// of that server and does not undo the others.
					var err error
					if _, gerr := c.Store.GetServer(ctx, srv.ID); gerr == nil || errors.Is(gerr, store.ErrSealOpen) {
						err = store.ErrDuplicate
					} else if err = a.grantServerOrigin(ctx, c, srv.URL); err == nil {
						// Granted first: a running daemon connects at once.
						err = c.Store.AddServer(ctx, srv)
					}
					switch {
					case err == nil:
						added++
						fmt.Fprintf(a.streams.Out, "added %s %s\n", srv.ID, cell(srv.URL))
					case errors.Is(err, store.ErrDuplicate):
						failed++
						fmt.Fprintf(a.streams.Out, "failed %s: %s\n", srv.ID, errExists(srv.ID))
					default:
						failed++
						fmt.Fprintf(a.streams.Out, "failed %s: %s\n", srv.ID, cell(fieldError(err).Error()))
					}
				}
			}
			for _, s := range skipped {
				fmt.Fprintf(a.streams.Out, "skipped %s: %s\n", cell(s.Name), cell(s.Reason))
			}
			total := len(servers) + len(skipped)
			fmt.Fprintf(a.streams.Err, "imported %d of %s (%d failed, %d skipped)\n", added, plural(total, "entry", "entries"), failed, len(skipped))
			if added == 0 {
				return fmt.Errorf("nothing was imported from %s", displayName(name))
			}
			return nil
		},
	}
}

// readInput reads a file, or stdin for "-", up to maxImportSize.
func readInput(a *app, name string) ([]byte, error) {
	var r io.Reader = a.streams.In
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxImportSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", displayName(name), err)
	}
	if len(data) > maxImportSize {
		return nil, fmt.Errorf("%s is larger than %d MiB; that is not an MCP client config", displayName(name), maxImportSize>>20)
	}
	return data, nil
}

func displayName(name string) string {
	if name == "-" {
		return "stdin"
	}
	return name
}

// ownFormat reports whether data is remotemcp's own server list (a JSON
// array, or {"servers": [...]}) rather than another client's config.
func ownFormat(data []byte) bool {
	t := bytes.TrimSpace(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")))
	if len(t) > 0 && t[0] == '[' {
		return true
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(t, &top) != nil {
		return false
	}
	v := bytes.TrimSpace(top["servers"])
	return len(v) > 0 && v[0] == '['
}
