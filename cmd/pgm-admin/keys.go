package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/postgram-go/postgram"
)

func (a *app) keyCmd() *cobra.Command {
	key := &cobra.Command{Use: "key", Short: "Create, list and revoke API keys"}
	var spec postgram.KeySpec
	var scopes, types, vis string
	create := &cobra.Command{
		Use:   "create NAME",
		Short: "Create an API key (the key is printed once and never stored)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := a.openStore(cmd.Context()); err != nil {
				return err
			}
			spec.Name = args[0]
			spec.Scopes = splitScopes(scopes)
			for _, t := range splitList(types) {
				spec.AllowedTypes = append(spec.AllowedTypes, postgram.EntityType(t))
			}
			for _, v := range splitList(vis) {
				spec.AllowedVisibilities = append(spec.AllowedVisibilities, postgram.Visibility(v))
			}
			token, k, err := a.client.CreateKey(cmd.Context(), spec)
			if err != nil {
				return err
			}
			if a.json {
				return json.NewEncoder(a.stdout).Encode(map[string]any{"key": token, "api_key": k})
			}
			fmt.Fprintf(a.stdout, "%s\n", token)
			fmt.Fprintf(a.stderr, "Created key %s (%s) for client %q with scopes %s.\nStore it now: it is shown once and cannot be recovered.\n",
				k.ID, k.Name, k.ClientID, joinScopes(k.Scopes))
			return nil
		},
	}
	create.Flags().StringVar(&scopes, "scopes", "read,write", "comma-separated scopes: read, write, delete, sync (or all)")
	create.Flags().StringVar(&types, "types", "", "comma-separated entity types the key may use (default all)")
	create.Flags().StringVar(&vis, "visibilities", "", "comma-separated visibilities the key may use (default all)")
	create.Flags().StringVar(&spec.ClientID, "client-id", "", "client id for session-context scoping (default: the key's name)")

	list := &cobra.Command{
		Use:   "list",
		Short: "List API keys",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := a.openStore(cmd.Context()); err != nil {
				return err
			}
			keys, err := a.client.ListKeys(cmd.Context())
			if err != nil {
				return err
			}
			if a.json {
				return json.NewEncoder(a.stdout).Encode(map[string]any{"keys": keys})
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tPREFIX\tSCOPES\tCLIENT\tCREATED\tLAST USED\tREVOKED")
			for _, k := range keys {
				fmt.Fprintf(tw, "%s\t%s\t%s…\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Name, k.Prefix, joinScopes(k.Scopes), k.ClientID,
					k.CreatedAt.Format(time.RFC3339), fmtTime(k.LastUsedAt), fmtTime(k.RevokedAt))
			}
			return tw.Flush()
		},
	}
	var yes, dry bool
	revoke := &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke an API key (every server refuses it on its next request)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := postgram.ParseID("id", args[0])
			if err != nil {
				return err
			}
			if err := a.openStore(cmd.Context()); err != nil {
				return err
			}
			if dry || !yes {
				fmt.Fprintf(a.stdout, "would revoke key %s", id)
				if !yes && !dry {
					fmt.Fprint(a.stdout, " (pass --yes to do it)")
				}
				fmt.Fprintln(a.stdout)
				if !dry {
					return usageError{"revoke needs --yes"}
				}
				return nil
			}
			if err := a.client.RevokeKey(cmd.Context(), id); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "revoked key %s\n", id)
			return nil
		},
	}
	revoke.Flags().BoolVar(&yes, "yes", false, "really revoke")
	revoke.Flags().BoolVar(&dry, "dry-run", false, "show what would be revoked")
	key.AddCommand(create, list, revoke)
	return key
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func splitScopes(s string) []postgram.Scope {
	if strings.TrimSpace(s) == "all" {
		return postgram.AllScopes
	}
	var out []postgram.Scope
	for _, p := range splitList(s) {
		out = append(out, postgram.Scope(p))
	}
	return out
}

func joinScopes(s []postgram.Scope) string {
	parts := make([]string, len(s))
	for i, x := range s {
		parts[i] = string(x)
	}
	return strings.Join(parts, ",")
}

func fmtTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
