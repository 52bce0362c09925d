package main

import (
	"github.com/spf13/cobra"

	"github.com/remotemcp/remotemcp/internal/storecopy"
)

// newStoreCmd is "store copy": moving a personal store into a gateway.
func newStoreCmd(a *app) *cobra.Command {
	var o storecopy.Options
	cp := &cobra.Command{
		Use:   "copy --to postgres://… --user EMAIL --gateway-data-dir DIR",
		Short: "Copy this personal store into a person of a gateway",
		Long: `Copy the personal store of --data-dir (its servers, tokens, secrets,
host tokens, grants, questions and tool pins) into the gateway user --user
of the database --to, adding that user when missing; the secrets are sealed
again with the key file in --gateway-data-dir. The personal store is left as
it was. Refused while a daemon runs on --data-dir, and when the user has
servers already; a failed copy writes nothing.`,
		Args: argsExactly(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.DataDir, o.User, o.Out, o.Err = a.dataDirPath(), a.user, a.streams.Out, a.streams.Err
			return storecopy.Run(cmd.Context(), o)
		},
	}
	cp.Flags().StringVar(&o.DSN, "to", "", "the gateway's PostgreSQL database (postgres://…)")
	cp.Flags().StringVar(&o.GatewayDataDir, "gateway-data-dir", "", "the gateway's data directory, whose key file seals its secrets")
	return group("store", "Move the personal store", "Move the personal store into a gateway (serve --store postgres://…).", cp)
}
