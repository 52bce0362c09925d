package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/session"
)

func newLogsCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "logs ID",
		Short: "Show a server's last 50 HTTP exchanges (no secrets)",
		Long: `Show the server's request log (R5.3): time, HTTP method, JSON-RPC method,
status, duration and the error of each of its last 50 HTTP exchanges.
Headers and bodies are never kept, and errors are redacted, so the log
holds no secret and can be shared. With a daemon running this is the
daemon's log of the server; without one, the command connects and shows
the exchanges of that connection (the handshake, or where it failed).`,
		Args: argsExactly(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, id := cmd.Context(), args[0]
			if dc, err := a.daemonClient(ctx); err != nil {
				return err
			} else if dc != nil {
				log, err := dc.Log(ctx, id)
				if err != nil {
					return err
				}
				return a.printLog(log, asJSON)
			}
			c, err := a.open(ctx)
			if err != nil {
				return err
			}
			srv, err := getServer(ctx, c.Store, id)
			if err != nil {
				c.Close()
				return err
			}
			l, err := a.startManager(ctx, c, []string{id}, 0)
			if err != nil {
				c.Close()
				return err
			}
			defer l.Close()
			fmt.Fprintf(a.streams.Err, "connecting to %s (%s) to record its exchanges…\n", id, cell(srv.URL))
			cctx, cancel := context.WithTimeout(ctx, defaultStatusWait)
			if err := l.m.Connect(cctx, id); err != nil && ctx.Err() == nil {
				fmt.Fprintf(a.streams.Err, "connect failed: %s\n", cell(redactText(err.Error())))
			}
			cancel()
			log, err := l.m.Log(id)
			if err != nil {
				return err
			}
			return a.printLog(log, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return cmd
}

func (a *app) printLog(log []session.Exchange, asJSON bool) error {
	if log == nil {
		log = []session.Exchange{}
	}
	if asJSON {
		return writeJSON(a.streams.Out, log)
	}
	if len(log) == 0 {
		fmt.Fprintln(a.streams.Err, "no exchanges recorded yet")
		return nil
	}
	return writeLogTable(a.streams.Out, log)
}

func writeLogTable(w io.Writer, log []session.Exchange) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "TIME\tHTTP\tRPC\tSTATUS\tMS\tERROR")
	for _, ex := range log {
		status := "-"
		if ex.Status != 0 {
			status = fmt.Sprint(ex.Status)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.1f\t%s\n", ex.Time.Format(time.TimeOnly), ex.HTTPMethod,
			cell(ex.RPCMethod), status, ex.Millis, cell(ex.Error))
	}
	return tw.Flush()
}
